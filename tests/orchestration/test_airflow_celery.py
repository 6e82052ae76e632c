"""tipbench's DAGs on several machines as docs/airflow-celery.md sets them up: Airflow's
CeleryExecutor with two workers that share nothing but the network
(`tipbench_dev.airflow_celery`), a real PostgreSQL as Airflow's metadata database (psycopg 3
for the sync and the async URL), Debian's `redis-server` as the broker, and a real `mlflow
server` with proxied artifacts as the one store. The API server generates the admin's
password; the tests log in with it copied alone into a file, as another machine would
(`TIPBENCH_AIRFLOW_PASSWORD_FILE`).

The two workers run on this machine, each with its own folders, TIPBENCH_HOME, caches and
name (the task instances' hostnames). Models are served by `support.ollama_server`, a
protocol server that follows Ollama's documented native API (real Ollama cannot be
installed here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from mlflow import MlflowClient

from support.airflow_home import finished, wait_for, wait_for_dags
from support.ollama_server import GEMMA, QWEN, TWO_MODELS, FakeOllama
from support.postgres import PostgresCluster
from support.promotable import MODEL as PROMOTED_MODEL
from support.promotable import make_promotable_experiment
from support.servers import MlflowServer
from tipbench.backends._threads import THREADS_ENV
from tipbench.orchestration import (
    AirflowClient,
    AirflowSettings,
    TaskInstance,
)
from tipbench.promote import production_prompt
from tipbench.tracking import CELL_RUNS, TrackingStore
from tipbench_dev.airflow_celery import CeleryDeployment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def metadata_db() -> Iterator[str]:
    """Airflow's metadata database: a database of a real PostgreSQL cluster."""
    with PostgresCluster() as cluster:
        yield cluster.database()


@pytest.fixture(scope="module")
def celery(
    tmp_path_factory: pytest.TempPathFactory, metadata_db: str
) -> Iterator[CeleryDeployment]:
    deployment = CeleryDeployment(
        tmp_path_factory.mktemp("airflow-celery"), metadata_db, workers=2,
        TIPBENCH_AIRFLOW_PARALLEL_MODELS="2",
        **{THREADS_ENV: "1"},  # two workers' models on two cores: one core each
    )  # fmt: skip
    try:
        yield deployment.start()
    finally:
        deployment.stop()


@pytest.fixture
def client(celery: CeleryDeployment, tmp_path: Path) -> Iterator[AirflowClient]:
    """Logged in as another machine would: the generated password, alone in a file."""
    password_file = tmp_path / "airflow-password"
    password_file.write_text(celery.admin_password())
    settings = AirflowSettings.from_env(
        {"TIPBENCH_AIRFLOW_URL": celery.url, "TIPBENCH_AIRFLOW_PASSWORD_FILE": str(password_file)}
    )
    assert settings is not None
    api = AirflowClient(settings)
    wait_for_dags(api)
    yield api
    api.close()


def test_the_deployment_keeps_its_runs_in_postgresql_and_workers_have_no_database(
    celery: CeleryDeployment, client: AirflowClient, metadata_db: str
) -> None:
    run_id = client.trigger("bench_collect", {"models": "no-such-backend:x"})  # fails in plan
    with psycopg.connect(metadata_db) as db:
        found = db.execute("SELECT dag_id FROM dag_run WHERE run_id = %s", (run_id,)).fetchall()
    assert found == [("bench_collect",)]
    for name in celery.worker_names:
        said = celery.install_output[name]
        assert "this machine is a worker with no Airflow metadata database" in said
        assert "airflow dags unpause" not in said


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
        ollama.clear_faults()  # what follows (the retry, the judge) need not be slow

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


def test_a_promotion_on_celery_waits_for_a_person_rejected_then_approved(
    celery: CeleryDeployment, client: AirflowClient, tmp_path: Path
) -> None:
    """`bench_judged` asked to apply a passing promotion, on the Celery workers with the
    store an MLflow server: the gate's dry run is recorded and a person is shown the
    decision with its checks; rejected through `PATCH …/taskInstances/approve/-1/hitlDetails`,
    nothing is applied; approved (another experiment of the same store), the prompt moves
    to production. Rejection first: after an approval nothing is left to promote."""
    with MlflowServer(tmp_path / "mlflow") as server:
        mlflow = MlflowClient(server.url)
        for answer, experiment in (("Reject", "tip-bench-rejected"), ("Approve", "tip-bench-ok")):
            make_promotable_experiment(server.url, experiment)
            conf = {"experiment": experiment, "apply": True, "mlflow_url": server.url}
            run_id = client.trigger("bench_judged", conf)
            detail = answer_approval(client, run_id, answer)
            assert f"{experiment}: promote {PROMOTED_MODEL} | v2-mentor" in detail["body"]
            assert "Production now: none" in detail["body"] and "[x]" in detail["body"]
            state = wait_for(finished(client, "bench_judged", run_id), 600, "bench_judged")
            assert state == "success", celery.log_tail()
            tasks = {t.task_id: t.state for t in client.task_instances("bench_judged", run_id)}
            exp = mlflow.get_experiment_by_name(experiment)
            assert exp is not None
            decisions = mlflow.search_runs(
                [exp.experiment_id], "tags.`tipbench.kind` = 'promotion'",
                order_by=["start_time ASC"],
            )  # fmt: skip
            assert decisions[0].data.tags["dry_run"] == "true"
            production = production_prompt(mlflow, "tipbench-tips")
            if answer == "Reject":
                assert decisions[0].data.tags["approval"] == "rejected"
                assert tasks["apply_promotion"] == "skipped" and len(decisions) == 1
                assert production is None  # nothing applied
            else:
                assert decisions[0].data.tags["approval"] == "approved"
                assert tasks["apply_promotion"] == "success"
                assert decisions[1].data.tags["decision"] == "promoted"
                assert production is not None and production.prompt_version == "v2-mentor"


def answer_approval(client: AirflowClient, run_id: str, answer: str) -> dict[str, Any]:
    """Wait until the run's approval waits for a person, then answer it through REST; the
    request as it was shown."""

    def asked() -> dict[str, Any] | None:
        states = {t.task_id: t.state for t in client.task_instances("bench_judged", run_id)}
        details = client.hitl_details("bench_judged", run_id)
        waiting = states.get("approve") in ("deferred", "awaiting_input")
        return details[0] if details and waiting else None

    detail = wait_for(asked, 600, "the approval to be asked")
    assert detail["options"] == ["Approve", "Reject"] and not detail["response_received"]
    # A person answers after seconds, not within the one the scheduler takes to see the task
    # defer (an answer within it races Airflow 3.3's bookkeeping of the deferral).
    time.sleep(5)
    client.answer_hitl("bench_judged", run_id, "approve", [answer])
    return detail
