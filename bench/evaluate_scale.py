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
import tempfile
from pathlib import Path

from _decision_logs import logs_of_sizes, measured

TARGET_S = 60.0
TARGET_MB_AT_2M = 300.0


def cli_round(log: Path, tracking: str) -> tuple[float, float]:
    """(seconds, peak resident MB) of one `policy evaluate --log`."""
    command = ["policy", "evaluate", "--log", str(log), "--tracking-uri", tracking]
    seconds, peak, _ = measured([*command, "--format", "json"])
    return seconds, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the logs in this folder.")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    with tempfile.TemporaryDirectory(prefix="tipbench-eval-") as tmp:
        logs = logs_of_sizes(args.keep or Path(tmp), sizes)
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
