"""CPU metering for the benchmarks: who used the CPU while a timed process ran.

`CpuMeter` reads the machine's busy time (/proc/stat) and a server's CPU time (its session's
processes, /proc/PID/stat); `run_timed` runs a fresh process, times it from start to exit,
keeps its output lines with their arrival times, and splits the CPU used meanwhile into the
process's own, the server's and every other process's. Other work on the machine only ever
adds time: `CpuMeter.wait_quiet` waits for it to stop before a timed run, and a run is
`quiet` when others used under `QUIET` of one CPU while it ran. Linux only.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

QUIET = 0.05  # a run is quiet if other processes used < 5% of one CPU on average meanwhile
_TICK = os.sysconf("SC_CLK_TCK")


def busy_cpu() -> float:
    """CPU-seconds all cores have spent busy since boot (from /proc/stat)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / _TICK  # minus idle and iowait


def session_cpu(session: int) -> float:
    """CPU-seconds used by the processes of a session (a server and its workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if int(fields[3]) == session:
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / _TICK


class CpuMeter:
    """Who used the CPU during a timed run: the run, a server (by session), everyone else."""

    def __init__(self, server_session: int) -> None:
        self.server_session = server_session

    def sample(self) -> tuple[float, float, float]:
        """(the machine's busy CPU-s, the server's CPU-s, this process's CPU-s)."""
        return busy_cpu(), session_cpu(self.server_session), time.process_time()

    def wait_server_idle(self, limit_s: float = 180.0) -> None:
        """Wait until the server has settled: an MLflow server starts job consumers (each
        one importing MLflow, seconds of CPU) after it first answers."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            before = session_cpu(self.server_session)
            time.sleep(2)
            if session_cpu(self.server_session) - before < 0.1:
                return

    def wait_quiet(self, limit_s: float, max_other: float = 0.15) -> float:
        """Wait until every other process (the server too: an MLflow server starts job
        consumers after it answers) uses < `max_other` of a CPU over 3 s; return the wait."""
        started = time.monotonic()
        told = False
        while True:
            before = self.sample()
            time.sleep(3)
            after = self.sample()
            other = (after[0] - before[0]) - (after[2] - before[2])
            if other / 3 < max_other:
                return time.monotonic() - started
            if not told:
                print(
                    f"    waiting for a quiet machine (others use {other / 3:.2f} CPU) ...",
                    flush=True,
                )
                told = True
            if time.monotonic() - started >= limit_s:
                print(f"    still busy after {limit_s:.0f} s: timing anyway", flush=True)
                return time.monotonic() - started


@dataclass
class Timed:
    """A process run: wall clock, exit code, CPU, and its output lines with arrival times."""

    seconds: float
    returncode: int
    cpu: float = 0.0  # CPU-seconds of the process itself (user + sys)
    server_cpu: float = 0.0  # CPU-seconds the server used meanwhile
    other_cpu: float = 0.0  # CPU-seconds every other process on the machine used meanwhile
    stdout: list[tuple[float, str]] = field(default_factory=list)
    stderr: list[tuple[float, str]] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(line for _, line in self.stdout + self.stderr)

    def first(self, prefix: str) -> float | None:
        """When the first stderr line starting with `prefix` arrived (s after start)."""
        return next((t for t, line in self.stderr if line.startswith(prefix)), None)

    def last(self, prefix: str) -> float | None:
        """When the last stderr line starting with `prefix` arrived (s after start)."""
        return next((t for t, line in reversed(self.stderr) if line.startswith(prefix)), None)

    def quiet(self, server_too: bool = False) -> bool:
        """Whether other processes (and, with `server_too`, the server) used under `QUIET`
        of one CPU while it ran."""
        others = self.other_cpu + (self.server_cpu if server_too else 0.0)
        return others <= QUIET * self.seconds


def run_timed(command: list[str], env: dict[str, str], meter: CpuMeter) -> Timed:
    """Run `command` (in the temporary folder) and time it from process start to exit."""
    before = meter.sample()
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    result = Timed(0.0, 0)

    def drain(stream: IO[str], lines: list[tuple[float, str]]) -> None:
        for line in stream:
            lines.append((time.perf_counter() - started, line.rstrip("\n")))

    readers = [
        threading.Thread(target=drain, args=(process.stdout, result.stdout)),
        threading.Thread(target=drain, args=(process.stderr, result.stderr)),
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(process.pid, 0)
    result.seconds = time.perf_counter() - started
    after = meter.sample()
    process.returncode = result.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    result.cpu = usage.ru_utime + usage.ru_stime
    result.server_cpu = after[1] - before[1]
    own = after[2] - before[2]
    result.other_cpu = max(0.0, after[0] - before[0] - result.cpu - result.server_cpu - own)
    return result
