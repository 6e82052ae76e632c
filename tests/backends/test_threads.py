"""The embedded model's threads: one per core free now, chosen from /proc at each load.

The choice is a function of readings (the cores this process may use, what other processes
take of them, what other tipbench models claim), checked here on fake /proc folders and
claims; the real model's tests check that the count reaches llama.cpp, is recorded with the
runs (`tests/collect/test_collect_embedded.py`, `tests/auto_judge/test_auto.py`) and leaves the
answers as they are.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tipbench.backends._threads import (
    THREADS_ENV,
    CpuSample,
    Machine,
    ThreadChoice,
    ThreadClaims,
    choose_threads,
    others_from,
    share,
    threads_for,
)

# /proc/stat of a 4-CPU machine: user nice system idle iowait irq softirq steal guest guest_nice
STAT = """\
cpu  4000 0 1000 9000 500 0 0 0 0 0
cpu0 1000 0 250 2250 125 0 0 0 0 0
cpu1 1000 0 250 2250 125 0 0 0 0 0
cpu2 1000 0 250 2250 125 0 0 100 0 0
cpu3 1000 0 250 2250 125 0 0 0 0 0
intr 12345
"""


@pytest.mark.parametrize(
    ("cores", "others", "threads"),
    [
        (2, 0.0, 2),  # idle: both cores (llama.cpp's default generated on one)
        (2, 0.1, 2),  # the odd daemon
        (2, 0.25, 2),  # a core three quarters free is a core
        (2, 0.3, 1),  # less than that: a thread without its core holds the others up
        (2, 1.0, 1),  # a busy loop on one core
        (2, 3.5, 1),  # a crowded machine: still one thread
        (8, 3.2, 5),
        (1, 0.0, 1),
    ],
)
def test_one_thread_per_core_that_other_processes_leave_free(
    cores: int, others: float, threads: int
) -> None:
    assert threads_for(cores, others) == threads


def test_busy_time_counts_the_cpus_this_process_may_use_and_steal(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT)
    machine = Machine(proc=tmp_path)
    tick = 100  # SC_CLK_TCK on Linux
    assert machine.busy_seconds({0, 1}) == pytest.approx(2 * 1250 / tick)
    assert machine.busy_seconds({2}) == pytest.approx((1250 + 100) / tick)  # steal is not ours
    assert Machine(proc=tmp_path / "none").busy_seconds({0}) is None  # no /proc: unknown


def test_a_cgroup_quota_caps_the_cores(tmp_path: Path) -> None:
    machine = Machine(cgroup=tmp_path)
    assert machine.usable_cores({0, 1, 2, 3}) == 4  # no cpu.max: the affinity decides
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert machine.usable_cores({0, 1, 2, 3}) == 4
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert machine.usable_cores({0, 1, 2, 3}) == 2  # 1.5 cores' quota: two threads' room
    assert machine.usable_cores({3}) == 1


def test_other_processes_are_what_the_cores_did_less_this_process() -> None:
    # over 0.5 s the two cores were busy 1.2 s, 0.7 s of it this process's (its imports)
    assert others_from(busy_s=1.2, own_s=0.7, wall_s=0.5) == pytest.approx(1.0)
    assert others_from(busy_s=0.1, own_s=0.3, wall_s=0.5) == 0.0  # never below nothing


def test_a_sample_without_proc_sees_no_other_process(tmp_path: Path) -> None:
    sample = CpuSample.start(Machine(proc=tmp_path), {0, 1})
    assert sample.others(at_least_s=0) == 0.0


def dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    return int(child.stdout)


def test_claims_of_live_processes_count_and_a_dead_ones_claim_is_dropped(tmp_path: Path) -> None:
    mine, other = ThreadClaims(tmp_path, pid=1_000_001), ThreadClaims(tmp_path)
    gone = ThreadClaims(tmp_path, pid=dead_pid())
    before = mine.version()
    other.claim(2)
    gone.claim(2)
    (tmp_path / str(os.getppid())).write_text("2 1")  # a pid its claimant had, now another's
    assert mine.version() != before
    assert mine.others() == {other.pid: 2}
    assert not (tmp_path / str(gone.pid)).exists()
    assert not (tmp_path / str(os.getppid())).exists()
    assert other.others() == {}  # its own claim is not another's
    other.release()
    assert mine.others() == {}


def test_without_a_folder_to_write_a_load_goes_on_unclaimed(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    claims = ThreadClaims(blocked / "claims")
    with claims.locked():
        claims.claim(2)
    assert claims.others() == {} and claims.version() == 0
    claims.release()


class FixedSample(CpuSample):
    """A sample whose other processes took `taken` cores."""

    def __init__(self, taken: float, cpus: set[int]) -> None:
        super().__init__(Machine(), cpus)
        self.taken = taken

    def others(self, at_least_s: float = 0.0) -> float:
        return self.taken


def test_the_choice_counts_claims_of_models_between_two_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    claims = ThreadClaims(tmp_path, pid=1_000_001)
    idle = choose_threads(FixedSample(0.05, {0, 1}), claims, cores=2)
    assert (idle.threads, idle.source, idle.cores) == (2, "machine", 2)
    assert idle.describe() == "2 threads (2 cores, others took 0.1)"

    ThreadClaims(tmp_path).claim(1)  # a model loaded in another process, idle right now
    beside = choose_threads(FixedSample(0.05, {0, 1}), claims, cores=2)
    assert (beside.threads, beside.others) == (1, 1.0)
    busy = choose_threads(FixedSample(1.6, {0, 1}), claims, cores=2)
    assert (busy.threads, busy.others) == (1, 1.6)


def test_the_variable_overrides_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THREADS_ENV, "3")
    choice = choose_threads(FixedSample(1.9, {0, 1}), ThreadClaims(tmp_path), cores=2)
    assert (choice.threads, choice.source) == (3, "variable")
    assert choice.describe() == f"3 threads ({THREADS_ENV})"
    monkeypatch.setenv(THREADS_ENV, "0")
    with pytest.raises(ValueError, match="must be a number of threads"):
        choose_threads(FixedSample(0, {0}), ThreadClaims(tmp_path), cores=1)


def test_a_model_gives_way_to_models_loaded_after_it_and_takes_its_threads_back(
    tmp_path: Path,
) -> None:
    """Two Airflow workers on two cores: the first chose both, the second loads beside it."""
    first = ThreadClaims(tmp_path, pid=1_000_001)
    chosen = ThreadChoice(2, "machine", cores=2, others=0.0, chosen=2)
    assert share(chosen, first).threads == 2
    second = ThreadClaims(tmp_path)
    second.claim(1)
    shared = share(chosen, first)
    assert shared.threads == 1
    assert shared.describe() == "1 thread (2 cores, others took 0.0, 2 before other models loaded)"
    second.release()
    assert share(shared, first).threads == 2
    pinned = ThreadChoice(2, "variable", chosen=2)
    second.claim(2)
    assert share(pinned, first) == pinned  # the variable's count is the user's
