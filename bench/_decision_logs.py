"""What the decision-log benches share: a simulated log at several sizes, and a CLI command
timed in a child with its peak resident memory.

The log is JSON lines in the export's format (`policy log export --format jsonl`), from
simulated `/serve` traffic of the bundled population: egreedy-v1 live, egreedy-v2 and linucb
as shadows, every decision rewarded. The smaller logs are the largest one's first rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tipbench.simulate import Contender, make_world, serve  # noqa: E402
from tipbench.simulate._log import log_rows  # noqa: E402
from tipbench.suite import load_suite  # noqa: E402

BATCH = 50  # worlds served at once
USERS, DAYS = 30, 14
# Runs the CLI in a child; prints what it printed, then its peak resident memory (KiB on Linux).
_MEASURED = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
if done.returncode:
    sys.exit(done.stderr.strip() or f"exit {done.returncode}")
sys.stdout.write(done.stdout)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

Row = dict[str, object]


def write_log(path: Path, decisions: int, shape: Callable[[Row], Row] = lambda row: row) -> int:
    """`decisions` rows of simulated traffic, each passed through `shape`; returns how many."""
    suite = load_suite()
    assert suite.population is not None and suite.catalogue is not None
    live = Contender.named("egreedy-v1")
    shadows = [Contender.named("egreedy-v2"), Contender.named("linucb")]
    written, seed = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while written < decisions:
            worlds = [
                make_world(suite.population, suite.catalogue, s, USERS, DAYS)
                for s in range(seed, seed + BATCH)
            ]
            served = serve(worlds, live, shadows, len(suite.population.categories))
            for index, world in enumerate(worlds):
                for row in log_rows(world, served, index, suite.catalogue):
                    out.write(json.dumps(shape(row)) + "\n")
                    written += 1
                    if written == decisions:
                        return written
            seed += BATCH
    return written


def logs_of_sizes(
    folder: Path, sizes: list[int], shape: Callable[[Row], Row] = lambda row: row
) -> dict[int, Path]:
    """A log per size in `folder`: the largest written (its time printed), the others its head."""
    folder.mkdir(parents=True, exist_ok=True)
    logs = {size: folder / f"log-{size}.jsonl" for size in sizes}
    largest = max(sizes)
    started = time.perf_counter()
    write_log(logs[largest], largest, shape)
    print(f"wrote {largest:,} decisions in {time.perf_counter() - started:.0f} s")
    for size in sizes:
        if size != largest:
            _head(logs[largest], logs[size], size)
    return logs


def _head(source: Path, target: Path, rows: int) -> None:
    with source.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as out:
        for number, line in enumerate(src):
            if number == rows:
                return
            out.write(line)


def measured(command: list[str]) -> tuple[float, float, list[str]]:
    """(seconds, peak resident MB, the lines printed) of `tipbench COMMAND` in a child."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, sys.executable, "-m", "tipbench.cli", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"tipbench {' '.join(command[:2])} failed: {done.stderr.strip()}")
    *printed, peak = done.stdout.strip().splitlines()
    return elapsed, int(peak) / 1024, printed
