"""`tipbench policy evaluate` on a large decision log: seconds and peak memory at each size,
whether the time grows linearly with the log, and the memory each decision adds.

Writes a JSON-lines decision log in the export's format (`policy log export --format jsonl`)
from simulated `/serve` traffic of the bundled population (egreedy-v1 live, egreedy-v2 and
linucb as shadows, every decision rewarded): `--sizes` decisions each (default 100,000 and
1,000,000; the smaller logs are the larger one's first rows; 2,000,000 lines are about
2.6 GB). Then runs `tipbench policy evaluate --log FILE` as a user does (a subprocess,
recording into a throwaway MLflow store) `--rounds` times per size, and prints the best
round, the time per 100,000 decisions, the ratio of the largest log's rate to the smallest's
(linear: close to 1; target: the 1M log under a minute), and each size's peak resident
memory (the most any round's process held, `ru_maxrss`) with the memory per decision
between the smallest and the largest log (the log is streamed: only the decision ids, 16
bytes each, grow with it; the target is at most 300 MB at 2 million decisions).

    python bench/evaluate_scale.py [--sizes 100000,1000000] [--rounds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tipbench.simulate import Contender, make_world, serve  # noqa: E402
from tipbench.simulate._log import log_rows  # noqa: E402
from tipbench.suite import load_suite  # noqa: E402

TARGET_S = 60.0
TARGET_MB_AT_2M = 300.0
BATCH = 50  # worlds served at once
USERS, DAYS = 30, 14
# Runs the CLI in a child and prints the child's peak resident memory (KiB on Linux).
MEASURED = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
if done.returncode:
    sys.exit(done.stderr.strip() or f"exit {done.returncode}")
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def write_log(path: Path, decisions: int) -> int:
    """At least `decisions` rows of simulated /serve traffic; returns how many."""
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
                    out.write(json.dumps(row) + "\n")
                    written += 1
                    if written == decisions:
                        return written
            seed += BATCH
    return written


def head(source: Path, target: Path, rows: int) -> None:
    with source.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as out:
        for number, line in enumerate(src):
            if number == rows:
                return
            out.write(line)


def cli_round(log: Path, tracking: str) -> tuple[float, float]:
    """(seconds, peak resident MB) of one `policy evaluate --log`."""
    command = [
        sys.executable, "-m", "tipbench.cli", "policy", "evaluate", "--log", str(log),
        "--tracking-uri", tracking, "--format", "json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *command], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"policy evaluate failed: {done.stderr.strip()}")
    return elapsed, int(done.stdout.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the logs in this folder.")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    with tempfile.TemporaryDirectory(prefix="tipbench-eval-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        largest = folder / f"log-{sizes[-1]}.jsonl"
        started = time.perf_counter()
        write_log(largest, sizes[-1])
        print(f"wrote {sizes[-1]:,} decisions in {time.perf_counter() - started:.0f} s")
        logs = {size: folder / f"log-{size}.jsonl" for size in sizes}
        for size in sizes[:-1]:
            head(largest, logs[size], size)
        tracking = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        cli_round(logs[sizes[0]], tracking)  # the store's tables; imports warmed
        best, peak = {}, {}
        for size in sizes:
            rounds = [cli_round(logs[size], tracking) for _ in range(args.rounds)]
            best[size] = min(seconds for seconds, _ in rounds)
            peak[size] = max(mb for _, mb in rounds)
            print(
                f"{size:>10,} decisions: policy evaluate {best[size]:6.1f} s best of "
                f"{args.rounds} ({', '.join(f'{s:.1f}' for s, _ in rounds)}); "
                f"{best[size] / size * 1e5:.2f} s per 100k; peak memory {peak[size]:,.0f} MB"
            )
    small, large = sizes[0], sizes[-1]
    ratio = (best[large] / large) / (best[small] / small)
    print(f"rate at {large:,} / rate at {small:,}: {ratio:.2f} (linear: about 1)")
    if large > small:
        per = (peak[large] - peak[small]) * 2**20 / (large - small)
        print(
            f"memory per decision between {small:,} and {large:,}: {per:,.0f} bytes "
            f"(peak {peak[large]:,.0f} MB / {peak[small]:,.0f} MB = "
            f"{peak[large] / peak[small]:.2f}; streamed: the ids' 16 bytes)"
        )
    if large >= 1_000_000:
        verdict = "PASS" if best[large] < TARGET_S * large / 1_000_000 else "FAIL"
        print(f"{large:,} decisions under {TARGET_S * large / 1_000_000:g} s: {verdict}")
    if large >= 2_000_000:
        verdict = "PASS" if peak[large] <= TARGET_MB_AT_2M else "FAIL"
        print(f"{large:,} decisions within {TARGET_MB_AT_2M:g} MB: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
