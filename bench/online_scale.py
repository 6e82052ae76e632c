"""`tipbench compare --tier online` on a large decision log: peak memory at each size and the
memory each decision adds (the tier streams the log twice through `policy evaluate`'s
reading: only the decision ids, 16 bytes each, may grow with it), and the time per 100,000
decisions with the ratio of the largest log's rate to the smallest's (linear: about 1).

Writes a JSON-lines decision log in the export's format from simulated `/serve` traffic of
the bundled population (egreedy-v1 live, egreedy-v2 and linucb as shadows, every decision
rewarded) whose every candidate carries its provenance: the catalogue's tips spread over three
prompt versions of one model (`--sizes` decisions each, default 100,000 and 1,000,000; the
smaller logs are the larger one's first rows). Then runs the command as a user does (a
subprocess, against a throwaway MLflow store) `--rounds` times per size and prints each
size's best time and peak resident memory (`ru_maxrss` of the child).

Issue 49's target is memory: at most 300 MB at 1,000,000 decisions, and under 64 bytes a
decision between the sizes. The seconds are printed for a run on an idle machine.

    python bench/online_scale.py [--sizes 100000,1000000] [--rounds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from _decision_logs import Row, logs_of_sizes, measured
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

TARGET_MB_AT_1M = 300.0
TARGET_BYTES_PER_DECISION = 64.0
MODEL = "llamacpp:smollm2-135m"
PROMPTS = ("v1", "v2-mentor", "v3-few-shot")
EXPERIMENT = "tip-bench-online-scale"


def with_sources() -> Callable[[Row], Row]:
    """Each row with every candidate's provenance: tip k of the catalogue is prompt k mod 3's."""
    catalogue = load_suite().catalogue
    assert catalogue is not None
    tips = {tip.id: index for index, tip in enumerate(catalogue.tips)}

    def shape(row: Row) -> Row:
        for candidate in row["candidates"]:  # type: ignore[attr-defined]
            index = tips[candidate["tip_id"]]
            candidate["source"] = {
                "model": MODEL,
                "prompt_version": PROMPTS[index % len(PROMPTS)],
                "experiment": EXPERIMENT,
                "tip_index": index,
            }
        return row

    return shape


def cli_round(log: Path, tracking: str) -> tuple[float, float, dict[str, object]]:
    """(seconds, peak resident MB, the JSON printed) of one `compare --tier online`."""
    command = ["compare", "--tier", "online", "--experiment", EXPERIMENT, "--decision-log"]
    seconds, peak, printed = measured(
        [*command, str(log), "--tracking-uri", tracking, "--format", "json"]
    )
    return seconds, peak, json.loads(printed[-1]) if printed else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the logs in this folder.")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    with tempfile.TemporaryDirectory(prefix="tipbench-online-") as tmp:
        logs = logs_of_sizes(args.keep or Path(tmp), sizes, with_sources())
        tracking = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        TrackingStore(tracking).experiment_id(EXPERIMENT, create=True)
        cli_round(logs[sizes[0]], tracking)  # imports warmed
        best, peak = {}, {}
        for size in sizes:
            rounds = [cli_round(logs[size], tracking) for _ in range(args.rounds)]
            best[size] = min(seconds for seconds, _, _ in rounds)
            peak[size] = max(mb for _, mb, _ in rounds)
            rows = rounds[-1][2].get("rows", [])
            shown = ", ".join(
                f"{r['prompt_version']} {r['standing']}"  # type: ignore[index]
                for r in rows  # type: ignore[attr-defined]
            )
            print(
                f"{size:>10,} decisions: {best[size]:6.1f} s best of {args.rounds} "
                f"({best[size] / size * 1e5:.2f} s per 100k); peak memory {peak[size]:,.0f} MB; "
                f"{shown}"
            )
    small, large = sizes[0], sizes[-1]
    ratio = (best[large] / large) / (best[small] / small)
    print(f"rate at {large:,} / rate at {small:,}: {ratio:.2f} (linear: about 1)")
    passed = True
    if large > small:
        per = (peak[large] - peak[small]) * 2**20 / (large - small)
        passed = per <= TARGET_BYTES_PER_DECISION
        print(
            f"memory per decision between {small:,} and {large:,}: {per:,.0f} bytes "
            f"(peak {peak[large]:,.0f} MB / {peak[small]:,.0f} MB = "
            f"{peak[large] / peak[small]:.2f}); target <= {TARGET_BYTES_PER_DECISION:g}: "
            f"{'PASS' if passed else 'FAIL'}"
        )
    if large >= 1_000_000:
        within = peak[large] <= TARGET_MB_AT_1M * large / 1_000_000
        passed = passed and within
        print(f"{large:,} decisions within {TARGET_MB_AT_1M:g} MB: {'PASS' if within else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
