#!/usr/bin/env python
"""What does running the pipeline as Airflow's `bench_collect` cost over `tipbench run`?

The same grid on the embedded model (SmolLM2-135M through llama.cpp; by default the
24-cell grid: 3 prompt versions × 8 scenarios) runs cold (fresh TIPBENCH_HOME, fresh SQLite
MLflow store, so no response cache) three ways per round:

  (a) `tipbench run` (collect → auto judge → export → compare), a fresh process timed
      from start to exit;
  (b) `bench_collect` through `dag.test()` on a real Airflow (SQLite metadata database
      migrated beforehand, DAGs installed with `tipbench airflow install-dags`): the same
      phases as tasks, in one process timed from start to exit;
  (c) `bench_collect` on the real scheduler: `airflow standalone` (LocalExecutor; started
      once, not timed) runs the run triggered through the REST API, timed from the run's
      `queued_at` to its `end_date` as Airflow records them.

Rounds rotate the order. Other work on the machine only ever adds time, so the verdicts
compare each side's best round (the median of the per-round ratios is printed beside them).

    python bench/airflow_overhead.py [--prompts v1,v2-mentor,v3-few-shot] [--n-scenarios N]
                                     [--n-tips N] [--repeat K]

Exit status: 0 if b/a ≤ 1.3, c/a ≤ 1.15 and every side recorded one run per cell; 1
otherwise.
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

from pydantic import SecretStr

from _report import best_ratio, median_ratio
from tipbench.collect._cache import CACHE_FILE
from tipbench.orchestration import AirflowClient, AirflowError, AirflowSettings
from tipbench.tracking import CELL_RUNS
from tipbench_dev.airflow import AirflowHome, AirflowStandalone

TARGET = 1.3  # dag.test() over tipbench run
SCHEDULER_TARGET = 1.15  # the real scheduler, queued to end, over tipbench run
MODEL = "llamacpp:smollm2-135m"
LABELS = {"a": "tipbench run", "b": "bench_collect (dag.test)", "c": "bench_collect (scheduler)"}


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


def run_scheduled(
    client: AirflowClient, work: Path, args: argparse.Namespace
) -> tuple[float, str, str]:
    """`bench_collect` on the standalone's scheduler: queued to end, as Airflow records it."""
    from datetime import datetime

    uri, experiment = f"sqlite:///{work / 'mlflow.db'}", "tip-bench-overhead"
    conf = {
        "models": MODEL, "prompts": args.prompts, "n_scenarios": args.n_scenarios,
        "n_tips": args.n_tips, "experiment": experiment, "mlflow_url": uri,
    }  # fmt: skip
    run_id = client.trigger("bench_collect", conf)
    while (state := client.run_state("bench_collect", run_id)) not in ("success", "failed"):
        time.sleep(1.0)
    if state != "success":
        raise SystemExit(f"bench_collect ended {state} on the scheduler")
    run = client.dag_run("bench_collect", run_id)
    queued = datetime.fromisoformat(str(run["queued_at"]))
    ended = datetime.fromisoformat(str(run["end_date"]))
    return (ended - queued).total_seconds(), uri, experiment


def standalone_home(root: Path) -> Path:
    """The standalone's TIPBENCH_HOME, where its tasks cache responses."""
    return root / "standalone-home"


def start_standalone(root: Path) -> tuple[AirflowStandalone, AirflowClient]:
    """A real `airflow standalone` with the DAGs parsed (not timed)."""
    standalone = AirflowStandalone(AirflowHome(root / "standalone").setup())
    standalone.start(TIPBENCH_HOME=str(standalone_home(root)))
    settings = AirflowSettings(standalone.url, "admin", SecretStr(standalone.admin_password()))
    client = AirflowClient(settings)
    deadline = time.monotonic() + 300
    while True:
        try:
            client.dag_runs("bench_collect")
            return standalone, client
        except AirflowError:
            if time.monotonic() > deadline:
                standalone.stop()
                raise SystemExit("the dag processor did not parse tipbench's DAGs") from None
            time.sleep(2.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="v1,v2-mentor,v3-few-shot")
    parser.add_argument("--n-scenarios", type=int, default=8)
    parser.add_argument("--n-tips", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    cells = len(args.prompts.split(",")) * args.n_scenarios

    with tempfile.TemporaryDirectory(prefix="tipbench-airflow-bench-") as tmp:
        root = Path(tmp)
        airflow = AirflowHome(root / "airflow").setup()  # migrate: not timed
        standalone, client = start_standalone(root)
        times: dict[str, list[float]] = {"a": [], "b": [], "c": []}
        complete = True
        try:
            for round_ in range(args.repeat):
                order = ["a", "b", "c"][round_ % 3 :] + ["a", "b", "c"][: round_ % 3]
                for side in order:
                    work = root / f"{side}{round_}"
                    work.mkdir()
                    if side == "a":
                        elapsed, uri, experiment = run_cli(work, args)
                    elif side == "b":
                        elapsed, uri, experiment = run_dag(airflow, work, args)
                    else:  # cold like the others: no responses cached by an earlier round
                        (standalone_home(root) / CACHE_FILE).unlink(missing_ok=True)
                        elapsed, uri, experiment = run_scheduled(client, work, args)
                    recorded = cell_count(uri, experiment)
                    complete &= recorded == cells
                    times[side].append(elapsed)
                    print(f"round {round_ + 1} {LABELS[side]:>26}: {elapsed:7.1f} s, "
                          f"{recorded}/{cells} cells")  # fmt: skip
        finally:
            client.close()
            standalone.stop()

    best = best_ratio(times["a"], times["b"])
    median = median_ratio(times["a"], times["b"])
    best_c = best_ratio(times["a"], times["c"])
    median_c = median_ratio(times["a"], times["c"])
    print(f"grid: {MODEL} × {args.prompts} × {args.n_scenarios} scenarios, n_tips {args.n_tips}")
    print(f"b/a (dag.test, best rounds) = {best:.2f}  (median of rounds {median:.2f}; "
          f"target ≤ {TARGET})")  # fmt: skip
    print(f"c/a (scheduler, queued to end, best rounds) = {best_c:.2f}  (median of rounds "
          f"{median_c:.2f}; target ≤ {SCHEDULER_TARGET})")  # fmt: skip
    print(json.dumps({"ratio": round(best, 3), "median_ratio": round(median, 3),
                      "scheduler_ratio": round(best_c, 3),
                      "scheduler_median_ratio": round(median_c, 3),
                      "a_s": times["a"], "b_s": times["b"], "c_s": times["c"]}))  # fmt: skip
    return 0 if best <= TARGET and best_c <= SCHEDULER_TARGET and complete else 1


if __name__ == "__main__":
    sys.exit(main())
