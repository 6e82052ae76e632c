"""How many threads the embedded model runs on: one per core free now, or
`TIPBENCH_LLAMA_THREADS`.

llama.cpp's threads wait for one another by spinning, so a thread without a core holds the
others up. Left to itself, llama-cpp-python generates on half the machine's CPUs and
evaluates prompts on all of them, whatever else runs: on an idle 2-core machine that left
a third of the speed unused (one generation thread: 69–75 tokens/s, two: 109–113), and
beside a busy loop on one core two threads made a grid 14 times slower than one thread
(issue 46; `bench/threads.py`). On Linux every session is a scheduling group of its own,
so a process gets its share of the cores, not its count of threads.

At each load the embedded backend counts the cores this process may run on (its CPU
affinity, capped by a cgroup's CPU quota), measures what other processes take of them over
a short sample (/proc/stat, less this process's own CPU), takes the larger of that and the
threads other tipbench models on the machine have claimed (`ThreadClaims`: they may be
between two requests at that moment), and runs on one thread per core that stays free
(`threads_for`), for generating and for evaluating prompts alike. The count does not change
the answers (llama.cpp computes each value on one thread; tested), so it may follow the
machine: while loaded, a model gives way to models loaded after it, never running on more
threads than the cores their claims leave (two Airflow workers on two cores: one thread
each), and takes its count back once they unload (`share`). `TIPBENCH_LLAMA_THREADS`
overrides all of it (the test suite runs every model on one thread).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

THREADS_ENV = "TIPBENCH_LLAMA_THREADS"
#: Where loaded models claim their threads (one file per process), machine-wide.
CLAIMS_DIR = Path(tempfile.gettempdir()) / "tipbench-llama-threads"
#: How long the other processes' CPU is measured before a load.
SAMPLE_S = 0.3
#: A core counts as free when other processes leave at least this much of it.
FREE_SHARE = 0.75

Source = Literal["machine", "variable"]


@dataclass(frozen=True)
class ThreadChoice:
    """The threads a loaded model runs on, and what they were chosen from."""

    threads: int
    source: Source
    cores: int = 0  # the cores this process may use (0: not counted, the variable decided)
    others: float = 0.0  # of them, what other processes took (cores' worth)
    chosen: int = 0  # what the load chose, before giving way to models loaded later

    def describe(self) -> str:
        """One line for the progress: `2 threads (2 cores, others took 0.1)`."""
        count = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        if self.source == "variable":
            return f"{count} ({THREADS_ENV})"
        shared = f", {self.chosen} before other models loaded" if self.threads < self.chosen else ""
        return f"{count} ({self.cores} cores, others took {self.others:.1f}{shared})"


def threads_for(cores: int, others: float) -> int:
    """One thread per core that other processes leave at least `FREE_SHARE` of, at least one.

    `others` is what other processes take of the `cores`, in cores' worth: 0.1 on an idle
    2-core machine gives 2 threads, a busy loop (1.0) gives 1, and so does anything over a
    quarter of a core beside it (a thread without its core costs more than a thread less).
    """
    free = cores - max(others, 0.0)
    return max(1, min(cores, math.floor(free + (1 - FREE_SHARE) + 1e-9)))


def variable_threads() -> int | None:
    """The count `TIPBENCH_LLAMA_THREADS` sets, or None when it is unset.

    Raises:
        ValueError: the variable is set to something other than a count of threads.
    """
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_ENV} must be a number of threads (1 or more), not {value!r}")
    return int(value)


def llama_threads() -> dict[str, int]:
    """`Llama`'s (or `llama_cpp.server`'s) thread arguments from `TIPBENCH_LLAMA_THREADS`
    alone, none when it is unset: how the test suite's and the benches' servers run.

    Raises:
        ValueError: the variable is set to something other than a count of threads.
    """
    count = variable_threads()
    return {} if count is None else {"n_threads": count, "n_threads_batch": count}


# --------------------------------------------------------------------------- the machine


@dataclass(frozen=True)
class Machine:
    """Where the CPU readings come from: /proc and /sys, or a fake folder in tests."""

    proc: Path = Path("/proc")
    cgroup: Path = Path("/sys/fs/cgroup")

    def usable_cores(self, cpus: set[int]) -> int:
        """The cores of `cpus` (this process's affinity) that a cgroup's quota leaves it."""
        try:
            quota, period = (self.cgroup / "cpu.max").read_text().split()[:2]
        except (OSError, ValueError):
            return len(cpus)
        if quota == "max":
            return len(cpus)
        return max(1, min(len(cpus), math.ceil(int(quota) / int(period))))

    def busy_seconds(self, cpus: set[int]) -> float | None:
        """CPU-seconds `cpus` have been busy since boot: everything but idle and iowait
        (time stolen by the hypervisor counts as busy: it is not ours to use); None where
        there is no /proc/stat to read."""
        try:
            lines = (self.proc / "stat").read_text().splitlines()
        except OSError:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        busy = 0
        for line in lines:
            name, *values = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            times = [int(v) for v in values[:8]]
            busy += sum(times) - times[3] - times[4]
        return busy / tick

    def started(self, pid: int) -> str | None:
        """When process `pid` started (clock ticks after boot; None: no such process), which
        tells it apart from a later process that got the same pid."""
        try:
            text = (self.proc / str(pid) / "stat").read_text()
        except OSError:
            return None
        return text[text.rfind(")") + 2 :].split()[19]


def cpus_of_this_process() -> set[int]:
    """The CPUs this process may run on (all of them where affinity is not known)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


@dataclass
class CpuSample:
    """What other processes take of this process's cores, measured from `start` to `end`.

    Started before the model's libraries are imported, it usually ends without waiting:
    the import's own CPU is this process's and is left out.
    """

    machine: Machine
    cpus: set[int]
    _started: tuple[float, float | None, float] = (0.0, None, 0.0)  # wall, busy, own CPU

    @classmethod
    def start(cls, machine: Machine | None = None, cpus: set[int] | None = None) -> CpuSample:
        sample = cls(machine or Machine(), cpus if cpus is not None else cpus_of_this_process())
        sample._started = sample._now()
        return sample

    def _now(self) -> tuple[float, float | None, float]:
        return time.monotonic(), self.machine.busy_seconds(self.cpus), time.process_time()

    def others(self, at_least_s: float = SAMPLE_S) -> float:
        """Cores' worth of CPU other processes used since `start`, waiting until the sample
        is `at_least_s` long (0 where the machine's CPU time cannot be read)."""
        wall0, busy0, own0 = self._started
        if busy0 is None:
            return 0.0
        wait = at_least_s - (time.monotonic() - wall0)
        if wait > 0:
            time.sleep(wait)
        wall1, busy1, own1 = self._now()
        if busy1 is None:
            return 0.0
        return others_from(busy1 - busy0, own1 - own0, wall1 - wall0)


def others_from(busy_s: float, own_s: float, wall_s: float) -> float:
    """Cores' worth of CPU other processes took: what the cores were busy for over `wall_s`,
    less this process's own CPU time meanwhile."""
    return max(0.0, (busy_s - own_s) / max(wall_s, 1e-6))


# --------------------------------------------------------------------------- claims


@dataclass
class ThreadClaims:
    """The threads each loaded tipbench model runs on, one file per process in `folder`
    (its count and the process's start time).

    A process that died leaves a file whose process is gone (or whose pid another process
    now has): it is not counted, and is removed. Claims are a courtesy between tipbench's
    own models: where the folder cannot be written, a load goes on without them.
    """

    folder: Path = CLAIMS_DIR
    machine: Machine = field(default_factory=Machine)
    pid: int = field(default_factory=os.getpid)  # at creation: a forked worker is itself

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held while a load decides and claims, so that two loads at once see each other."""
        try:
            self._folder()
            lock = open(self.folder / ".lock", "a")  # noqa: SIM115 (held for the block)
        except OSError:
            yield
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def others(self) -> dict[int, int]:
        """Threads claimed by other live processes, by pid."""
        found: dict[int, int] = {}
        with contextlib.suppress(OSError):
            for path in self.folder.iterdir():
                if not path.name.isdigit() or int(path.name) == self.pid:
                    continue
                with contextlib.suppress(OSError, ValueError):
                    threads, started = path.read_text().split()
                    if self.machine.started(int(path.name)) == started:
                        found[int(path.name)] = int(threads)
                        continue
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)  # its process is gone
        return found

    def claim(self, threads: int) -> None:
        with contextlib.suppress(OSError):
            self._folder()
            path = self.folder / str(self.pid)
            staged = path.with_suffix(".new")
            staged.write_text(f"{threads} {self.machine.started(self.pid)}")
            staged.replace(path)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            (self.folder / str(self.pid)).unlink(missing_ok=True)

    def version(self) -> int:
        """Changes whenever a claim is made or released (the folder's mtime)."""
        try:
            return self.folder.stat().st_mtime_ns
        except OSError:
            return 0

    def _folder(self) -> None:
        """The folder, writable by every user (as /tmp is) the first time it is made."""
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                self.folder.chmod(0o1777)


def choose_threads(
    sample: CpuSample, claims: ThreadClaims, cores: int | None = None
) -> ThreadChoice:
    """The threads for a load: the variable's count, else one per core free (see module).
    Call under `claims.locked()`, and claim the count before releasing it.

    Raises:
        ValueError: `TIPBENCH_LLAMA_THREADS` is not a count of threads.
    """
    pinned = variable_threads()
    if pinned is not None:
        return ThreadChoice(pinned, "variable", chosen=pinned)
    usable = cores if cores is not None else sample.machine.usable_cores(sample.cpus)
    others = max(sample.others(), float(sum(claims.others().values())))
    count = threads_for(usable, others)
    return ThreadChoice(count, "machine", usable, others, count)


def share(choice: ThreadChoice, claims: ThreadClaims) -> ThreadChoice:
    """`choice` giving way to the tipbench models loaded now: no more threads than the cores
    their claims leave (at least one), never more than it chose; the variable's count is
    kept as it is."""
    if choice.source == "variable":
        return choice
    left = choice.cores - sum(claims.others().values())
    return replace(choice, threads=max(1, min(choice.chosen, left)))
