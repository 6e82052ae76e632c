"""tipbench's DAGs on several machines: Airflow's CeleryExecutor with two workers that share
nothing but the network (`tipbench._dev.airflow_celery`), Debian's `redis-server` as the
broker, and a real `mlflow server` with proxied artifacts as the one store.

The two workers run on this machine, each with its own folders, TIPBENCH_HOME, caches and
name (the task instances' hostnames). Models are served by `support.ollama_server`, a
protocol server that follows Ollama's documented native API (real Ollama cannot be
installed here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pydantic import SecretStr

from support.airflow_home import finished, wait_for, wait_for_dags
from support.ollama_server import GEMMA, QWEN, TWO_MODELS, FakeOllama
from support.servers import MlflowServer
from tipbench._dev.airflow_celery import ADMIN_PASSWORD, CeleryDeployment
from tipbench.orchestration import (
    AirflowClient,
    AirflowSettings,
    TaskInstance,
)
from tipbench.tracking import CELL_RUNS, TrackingStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def celery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryDeployment]:
    deployment = CeleryDeployment(
        tmp_path_factory.mktemp("airflow-celery"), workers=2, TIPBENCH_AIRFLOW_PARALLEL_MODELS="2"
    )
    try:
        yield deployment.start()
    finally:
        deployment.stop()


@pytest.fixture
def client(celery: CeleryDeployment) -> Iterator[AirflowClient]:
    api = AirflowClient(AirflowSettings(celery.url, "admin", SecretStr(ADMIN_PASSWORD)))
    wait_for_dags(api)
    yield api
    api.close()


def collects(client: AirflowClient, run_id: str) -> list[TaskInstance]:
    return [t for t in client.task_instances("bench_collect", run_id) if t.task_id == "collect"]


def test_bench_collect_on_two_celery_workers_survives_losing_one(
    celery: CeleryDeployment,
    client: AirflowClient,
    mlflow_server: MlflowServer,
    experiment: str,
    tmp_path: Path,
) -> None:
    store = MlflowClient(mlflow_server.url)

    def cells_of(model: str) -> list[object]:
        exp = store.get_experiment_by_name(experiment)
        if exp is None:
            return []
        found = store.search_runs([exp.experiment_id], CELL_RUNS)
        return [r for r in found if r.info.run_name.startswith(f"{model}|")]

    with FakeOllama(TWO_MODELS) as ollama:
        ollama.delay_next(4.0, count=200)  # slow generations: both models collect at once
        conf = {
            "models": f"ollama:{QWEN},ollama:{GEMMA}", "prompts": "v1,v2-mentor",
            "n_scenarios": 3, "n_tips": 2, "experiment": experiment,
            "ollama_url": ollama.url, "mlflow_url": mlflow_server.url,
            "judge_model": f"ollama:{QWEN}",
        }  # fmt: skip
        run_id = client.trigger("bench_collect", conf)

        def on_worker_2() -> str | None:  # its model, once it has recorded a cell there
            running = [t for t in collects(client, run_id) if t.state == "running"]
            mine = [t.label for t in running if t.hostname == "worker-2" and t.label]
            return mine[0] if mine and cells_of(mine[0]) else None

        victim_model = wait_for(on_worker_2, 600, "a collect task on worker-2 to record a cell")
        celery.kill_worker("worker-2")  # the machine dies mid-task

        state = wait_for(finished(client, "bench_collect", run_id), 1200, "bench_collect to end")
        assert state == "success", celery.log_tail()

    tasks = {t.label: t for t in collects(client, run_id)}
    assert tasks[victim_model].try_number >= 2  # retried …
    assert tasks[victim_model].hostname == "worker-1"  # … on the worker that is left
    (other,) = set(tasks) - {victim_model}
    assert tasks[other].try_number == 1  # the other model ran once, on either worker
    exp = store.get_experiment_by_name(experiment)
    assert exp is not None
    runs = store.search_runs([exp.experiment_id], CELL_RUNS)
    keys = [r.data.tags["cell_key"] for r in runs]
    assert len(keys) == 12 and len(set(keys)) == 12  # exactly one run per cell
    assert all(r.info.status == "FINISHED" for r in runs)

    # The judge file is an artifact of the store, its URI the XCom: the CLI applies it.
    uri = client.xcom("bench_collect", run_id, "export_for_judge")
    assert isinstance(uri, str) and uri.startswith("runs:/")
    local = TrackingStore(mlflow_server.url).fetch_file(uri, tmp_path)
    assert len(json.loads(local.read_text())["items"]) == 12
    applied = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "judge", "apply", "--experiment", experiment,
         "--tracking-uri", mlflow_server.url, uri],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "no such file" not in applied.stderr and "cannot fetch" not in applied.stderr
    assert "applied 0 runs" in applied.stdout, applied.stdout + applied.stderr
    assert "12 not scored yet" in applied.stdout  # the file was read from the store
    # The leaderboard is logged in the same store.
    board = store.get_run(client.xcom("bench_collect", run_id, "compare"))
    assert board.data.tags["tipbench.kind"] == "leaderboard"


def test_a_store_only_one_machine_sees_is_refused_in_plan(
    celery: CeleryDeployment, client: AirflowClient, experiment: str, tmp_path: Path
) -> None:
    conf = {"experiment": experiment, "mlflow_url": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    run_id = client.trigger("bench_collect", conf)
    assert (
        wait_for(finished(client, "bench_collect", run_id), 600, "bench_collect to end") == "failed"
    )
    (plan,) = [t for t in client.task_instances("bench_collect", run_id) if t.task_id == "plan"]
    assert plan.state == "failed" and plan.try_number == 1  # not retried
    logs = [p.read_text(errors="replace") for p in celery.root.glob("worker-*/logs/**/*.log")]
    refusal = "is a store only this machine can see, but tasks run on several (CeleryExecutor)"
    assert any(f"mlflow_url: sqlite:///{tmp_path}" in log and refusal in log for log in logs)
