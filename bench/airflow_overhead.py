#!/usr/bin/env python
"""What does running the pipeline as Airflow's `bench_collect` cost over `tipbench run`?

The same small grid on the embedded model (SmolLM2-135M through llama.cpp) runs cold (fresh
TIPBENCH_HOME, fresh SQLite MLflow store, so no response cache) twice per round, each as a
fresh process timed from start to exit:

  (a) `tipbench run` (collect → auto judge → export → compare);
  (b) `bench_collect` through `dag.test()` on a real Airflow (SQLite metadata database
      migrated beforehand, DAGs installed with `tipbench airflow install-dags`): the same
      phases as tasks (plan, one mapped collect, judge_auto, export_for_judge, compare).

Rounds alternate the order. Other work on the machine only ever adds time, so the verdict
compares each side's best round (the median of the per-round ratios is printed beside it).

    python bench/airflow_overhead.py [--prompts v1,v2-mentor] [--n-scenarios N]
                                     [--n-tips N] [--repeat K]

Exit status: 0 if b/a ≤ 1.3 and both sides recorded one run per cell; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import best_ratio, median_ratio
from tipbench._dev.airflow import AirflowHome
from tipbench.tracking import CELL_RUNS

TARGET = 1.3
MODEL = "llamacpp:smollm2-135m"


def cell_count(uri: str, experiment: str) -> int:
    from mlflow import MlflowClient

    exp = MlflowClient(uri).get_experiment_by_name(experiment)
    if exp is None:
        return 0
    runs = MlflowClient(uri).search_runs([exp.experiment_id], CELL_RUNS)
    return len(runs)


def run_cli(work: Path, args: argparse.Namespace) -> tuple[float, str, str]:
    uri, experiment = f"sqlite:///{work / 'mlflow.db'}", "tip-bench-overhead"
    env = {**os.environ, "TIPBENCH_HOME": str(work / "home")}
    command = [
        sys.executable, "-m", "tipbench.cli", "run", "--models", MODEL,
        "--prompts", args.prompts, "--n-scenarios", str(args.n_scenarios),
        "--n-tips", str(args.n_tips), "--experiment", experiment, "--tracking-uri", uri,
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"tipbench run failed: {done.stderr[-2000:]}")
    return elapsed, uri, experiment


def run_dag(airflow: AirflowHome, work: Path, args: argparse.Namespace) -> tuple[float, str, str]:
    uri, experiment = f"sqlite:///{work / 'mlflow.db'}", "tip-bench-overhead"
    conf = {
        "models": MODEL, "prompts": args.prompts, "n_scenarios": args.n_scenarios,
        "n_tips": args.n_tips, "experiment": experiment, "mlflow_url": uri,
    }  # fmt: skip
    os.environ["TIPBENCH_HOME"] = str(work / "home")
    started = time.perf_counter()
    run = airflow.dag_test("bench_collect", conf)
    elapsed = time.perf_counter() - started
    if run.state != "success":
        raise SystemExit(f"bench_collect ended {run.state}: {run.output[-2000:]}")
    return elapsed, uri, experiment


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="v1,v2-mentor")
    parser.add_argument("--n-scenarios", type=int, default=2)
    parser.add_argument("--n-tips", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    cells = len(args.prompts.split(",")) * args.n_scenarios

    with tempfile.TemporaryDirectory(prefix="tipbench-airflow-bench-") as tmp:
        root = Path(tmp)
        airflow = AirflowHome(root / "airflow").setup()  # migrate: not timed
        times: dict[str, list[float]] = {"a": [], "b": []}
        complete = True
        for round_ in range(args.repeat):
            order = ("a", "b") if round_ % 2 == 0 else ("b", "a")
            for side in order:
                work = root / f"{side}{round_}"
                work.mkdir()
                if side == "a":
                    elapsed, uri, experiment = run_cli(work, args)
                else:
                    elapsed, uri, experiment = run_dag(airflow, work, args)
                recorded = cell_count(uri, experiment)
                complete &= recorded == cells
                times[side].append(elapsed)
                label = "tipbench run" if side == "a" else "bench_collect (dag.test)"
                print(f"round {round_ + 1} {label:>26}: {elapsed:7.1f} s, {recorded}/{cells} cells")

    best = best_ratio(times["a"], times["b"])
    median = median_ratio(times["a"], times["b"])
    print(f"grid: {MODEL} × {args.prompts} × {args.n_scenarios} scenarios, n_tips {args.n_tips}")
    print(f"b/a (best rounds) = {best:.2f}  (median of rounds {median:.2f}; target ≤ {TARGET})")
    print(json.dumps({"ratio": round(best, 3), "median_ratio": round(median, 3),
                      "a_s": times["a"], "b_s": times["b"]}))  # fmt: skip
    return 0 if best <= TARGET and complete else 1


if __name__ == "__main__":
    sys.exit(main())
