#!/usr/bin/env python
"""What does `tipbench optimize` cost on top of the generations and judgments it makes?

One optimization (embedded model as the task model, the judge and the reflection model;
v1 on N training scenarios (1), N tips per cell (1); `--no-heldout`; a fresh tipbench home
and SQLite store, so nothing comes from a cache) is timed against a bare loop of the same
requests:

  (o) `tipbench optimize`, run by `_optimize_recorded.py`, which records every request the
      embedded backend gets, in blocks (a model loaded, its requests, unloaded), and the
      seconds spent inside the backend's load, generate and unload;
  (a) baseline: plain llama-cpp-python replaying those blocks in order (`_baseline_blocks.py`:
      the same requests, seeds and token counts, the same loads as the one-model-resident
      rule makes, no tipbench, no GEPA, no MLflow). It evaluates the judge's rubric in every
      judge block, where (o) evaluates it once per process and restores it on later loads
      (`backends/_warmed.py`): the same answers for less work.

Both are timed from process start to exit. It prints, per round and as the best round's
(least disturbed) figures: (o)'s wall time, (a)'s, the ratio o/a (target ≤ 1.10: the
optimizer's overhead over its generations and judgments), o/inside (the same against the
time (o) itself spent inside the backend), and per iteration the evaluations made and the
wall time between its recorded end and the one before (MLflow's metric timestamps).

    python bench/optimize_cost.py [--budget N] [--train N] [--n-tips N] [--rounds K]
                                  [--quiet-wait SECONDS]

Exit status: 0 if o/a ≤ 1.10 in the best round, every round spent what its budget allows
(a ceiling: it stops before an iteration that could pass it) and the bare loop generated
the same tokens (within 2 %); 1 otherwise. Smoke-run it with the defaults
(one iteration); final figures come from an idle machine with more rounds (see
bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlflow import MlflowClient

from _arms import prepared_home
from _cpu import CpuMeter, run_timed
from _report import best_ratio, spread
from tipbench.optimize import BEST_METRIC, KIND_OPTIMIZATION, iteration_ceiling, iteration_cost
from tipbench.tracking import KIND_TAG

HERE = Path(__file__).parent
MODEL = "llamacpp:smollm2-135m"
TARGET = 1.10


@dataclass(frozen=True)
class Round:
    optimize_s: float
    baseline_s: float
    inside_s: float
    requests: int
    loads: int
    iterations: list[tuple[int, int, float]]  # (iteration, evaluations made, wall s)
    spent: int
    tokens: int  # completion tokens the optimizer's requests got
    replayed_tokens: int  # and the bare loop's: the same generations if equal


def optimize_args(args: argparse.Namespace, uri: str) -> list[str]:
    scenarios = ["student-morning", "student-evening", "engineer-morning", "engineer-evening"]
    return [
        "optimize", "--from", "v1", "--model", MODEL, "--judge-model", MODEL,
        "--reflection-model", MODEL, "--budget", str(args.budget),
        "--train-scenarios", ",".join(scenarios[: args.train]), "--minibatch", str(args.train),
        "--n-tips", str(args.n_tips), "--no-heldout", "--tracking-uri", uri,
    ]  # fmt: skip


def iterations(uri: str) -> tuple[list[tuple[int, int, float]], int]:
    """Per recorded iteration: evaluations made in it, wall seconds since the one before."""
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("tip-bench-optimize")
    assert experiment is not None, "the optimization recorded nothing"
    (run,) = client.search_runs(
        [experiment.experiment_id], f"tags.`{KIND_TAG}` = '{KIND_OPTIMIZATION}'"
    )
    history = sorted(
        client.get_metric_history(run.info.run_id, "evaluations"), key=lambda m: m.step
    )
    rows, before = [], None
    for metric in history:
        if before is not None:
            made = int(metric.value - before.value)
            rows.append((metric.step, made, (metric.timestamp - before.timestamp) / 1000))
        before = metric
    assert client.get_metric_history(run.info.run_id, BEST_METRIC)
    return rows, int(history[-1].value) if history else 0


def one_round(args: argparse.Namespace, home: Path, workdir: Path, meter: CpuMeter) -> Round:
    fresh = workdir / "home"
    shutil.copytree(home, fresh)
    env = {**os.environ, "TIPBENCH_HOME": str(fresh)}
    uri = f"sqlite:///{workdir / 'mlflow.db'}"
    blocks = workdir / "blocks.json"
    meter.wait_quiet(args.quiet_wait)
    recorded = [sys.executable, str(HERE / "_optimize_recorded.py"), str(blocks), "--"]
    optimized = run_timed([*recorded, *optimize_args(args, uri)], env, meter)
    if optimized.returncode != 0:
        raise SystemExit(f"tipbench optimize failed:\n{optimized.text()[-3000:]}")
    log = json.loads(blocks.read_text())
    meter.wait_quiet(args.quiet_wait)
    replayed = workdir / "replayed.json"
    bare = [sys.executable, str(HERE / "_baseline_blocks.py"), str(blocks), str(replayed)]
    baseline = run_timed(bare, env, meter)
    if baseline.returncode != 0:
        raise SystemExit(f"the baseline failed:\n{baseline.text()[-3000:]}")
    rows, spent = iterations(uri)
    tokens = json.loads(replayed.read_text())
    return Round(
        optimized.seconds, baseline.seconds, log["inside_s"],
        sum(len(b["requests"]) for b in log["blocks"]), len(log["blocks"]), rows, spent,
        tokens["recorded_tokens"], tokens["tokens"],
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=0, help="[default: one iteration]")
    parser.add_argument("--train", type=int, default=1, choices=(1, 2, 3, 4))
    parser.add_argument("--n-tips", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quiet-wait", type=float, default=60.0)
    args = parser.parse_args()
    args.budget = args.budget or iteration_cost(args.train, args.train)
    meter = CpuMeter(0)
    with tempfile.TemporaryDirectory(prefix="optimize-cost-") as tmp:
        root = Path(tmp)
        home = Path(prepared_home(root, {})["TIPBENCH_HOME"])
        rounds = []
        for number in range(1, args.rounds + 1):
            workdir = root / f"round-{number}"
            workdir.mkdir()
            found = one_round(args, home, workdir, meter)
            rounds.append(found)
            print(f"round {number}: optimize {found.optimize_s:.1f} s, bare loop "
                  f"{found.baseline_s:.1f} s, o/a {found.optimize_s / found.baseline_s:.3f}, "
                  f"o/inside {found.optimize_s / found.inside_s:.3f} ({found.requests} requests "
                  f"in {found.loads} loads, {found.spent} evaluations; tokens {found.tokens} vs "
                  f"replayed {found.replayed_tokens})", flush=True)  # fmt: skip
    best = min(rounds, key=lambda r: r.optimize_s)
    print("iteration  evaluations  wall s   (best round)")
    for iteration, made, seconds in best.iterations:
        print(f"{iteration:>9}  {made:>11}  {seconds:>6.1f}")
    o = [r.optimize_s for r in rounds]
    a = [r.baseline_s for r in rounds]
    ratio = best_ratio(a, o)
    print(f"o/a best rounds {ratio:.3f} (target ≤ {TARGET:.2f}); per round {spread(a, o)}")
    print(f"o/inside best round {best.optimize_s / best.inside_s:.3f}")
    same = all(abs(r.tokens - r.replayed_tokens) <= 0.02 * r.tokens for r in rounds)
    print(f"the bare loop generated the same tokens (±2 %): {'yes' if same else 'NO'}")
    ceiling = iteration_ceiling(args.train, args.train)
    spent = all(r.spent <= args.budget < r.spent + ceiling for r in rounds)
    print(f"every round spent what its budget allows: {'yes' if spent else 'NO'}")
    ok = ratio <= TARGET and same and spent
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
