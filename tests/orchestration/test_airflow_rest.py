"""tipbench's DAGs on a real Airflow: `airflow standalone` started here on loopback.

The scheduler, dag processor, API server and LocalExecutor run with a SQLite metadata
database in a temporary AIRFLOW_HOME, with the DAGs installed by `tipbench airflow
install-dags`. Models are served by `support.ollama_server`, a protocol server that follows
Ollama's documented native API (real Ollama cannot be installed here); runs are tracked in
a real `mlflow server`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from mlflow import MlflowClient
from pydantic import SecretStr

from support.airflow_home import (
    AirflowHome,
    AirflowStandalone,
    finished,
    run_report,
    task_process,
    wait_for,
    wait_for_dags,
)
from support.ollama_server import GEMMA, QWEN, TWO_MODELS, FakeOllama
from support.promotable import make_promotable_experiment
from support.servers import MlflowServer
from tipbench.admin import ServerSettings, create_app
from tipbench.orchestration import (
    AirflowClient,
    AirflowSettings,
)

pytestmark = pytest.mark.slow

TOKEN = "airflow-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowStandalone]:
    home = AirflowHome(tmp_path_factory.mktemp("airflow-standalone")).setup()
    standalone = AirflowStandalone(home)
    standalone.start(TIPBENCH_HOME=str(home.root / "tipbench-home"))
    try:
        yield standalone
    finally:
        standalone.stop()


@pytest.fixture
def client(airflow: AirflowStandalone) -> Iterator[AirflowClient]:
    settings = AirflowSettings(airflow.url, "admin", SecretStr(airflow.admin_password()))
    api = AirflowClient(settings)
    wait_for_dags(api)
    yield api
    api.close()


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama(TWO_MODELS) as server:
        yield server


def cells(uri: str, experiment: str) -> list[object]:
    exp = MlflowClient(uri).get_experiment_by_name(experiment)
    if exp is None:
        return []
    return list(MlflowClient(uri).search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'cell'"))


def collections(uri: str, experiment: str) -> list[Any]:
    exp = MlflowClient(uri).get_experiment_by_name(experiment)
    assert exp is not None
    found = MlflowClient(uri).search_runs(
        [exp.experiment_id], "tags.`tipbench.kind` = 'collection'"
    )
    return list(found)


def test_admin_api_runs_on_airflow_then_judge_apply_runs_bench_judged(
    airflow: AirflowStandalone,
    client: AirflowClient,
    ollama: FakeOllama,
    mlflow_server: MlflowServer,
    experiment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    password_file = write_password(tmp_path, airflow)
    monkeypatch.setenv("TIPBENCH_AIRFLOW_URL", airflow.url)
    monkeypatch.setenv("TIPBENCH_AIRFLOW_PASSWORD_FILE", str(password_file))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    settings = ServerSettings(admin_token=SecretStr(TOKEN), secure_cookies=False)
    body = {
        "models": f"ollama:{QWEN},ollama:{GEMMA}", "prompts": "v1", "n_scenarios": 1,
        "n_tips": 2, "experiment": experiment, "ollama_url": ollama.url,
    }  # fmt: skip
    with TestClient(create_app(settings), headers=AUTH) as api:
        started = api.post("/api/bench/run", json=body)
        assert started.status_code == 202, started.text
        job_id = started.json()["job_id"]
        job = api.get(f"/api/bench/jobs/{job_id}").json()
        assert job["state"] == "running" and job["dag_run_id"]
        assert job["airflow_url"] == f"{airflow.url}/dags/bench_collect/runs/" + quote(
            job["dag_run_id"], safe=""
        )
        assert client.run_state("bench_collect", job["dag_run_id"]) in ("queued", "running")

        def job_done() -> dict[str, object] | None:
            status = api.get(f"/api/bench/jobs/{job_id}").json()
            return status if status["state"] not in ("queued", "running") else None

        job = wait_for(job_done, 1200, "the job on Airflow")
        assert job["state"] == "succeeded", (job, api.get(f"/api/bench/jobs/{job_id}/log").text)
        assert (job["models_done"], job["models_total"]) == (2, 2)
        # cells and candidates from the tasks' progress events (their logs, through REST)
        assert (job["cells_done"], job["cells_total"]) == (2, 2)
        assert job["judge_total"] > 0 and job["judged"] == job["judge_total"]
        log = api.get(f"/api/bench/jobs/{job_id}/log").text
        assert f"collect[ollama:{QWEN}] success, collect[ollama:{GEMMA}] success" in log
        assert "judge file: runs:/" in log  # export_for_judge's XCom: an MLflow artifact
        assert airflow.admin_password() not in log
        board = api.get(f"/api/bench/leaderboard/{experiment}", params={"tier": "auto"})
        assert board.status_code == 200
        assert {row["model"] for row in board.json()["rows"]} == {
            f"ollama:{QWEN}",
            f"ollama:{GEMMA}",
        }
    assert ollama.loads == {QWEN: 1, GEMMA: 1} and ollama.max_resident == 1
    assert len(cells(mlflow_server.url, experiment)) == 2
    parents = collections(mlflow_server.url, experiment)
    assert {p.data.tags["airflow.map_index"] for p in parents} == {"0", "1"}
    for parent in parents:  # which DAG run, task and try wrote it
        assert parent.data.tags["airflow.dag_id"] == "bench_collect"
        assert parent.data.tags["airflow.run_id"] == job["dag_run_id"]
        assert parent.data.tags["airflow.task_id"] == "collect"
        assert parent.data.tags["airflow.try_number"] == "1"

    # A human scores everything; `judge apply` tells Airflow, which runs bench_judged.
    judge_file = tmp_path / "judge.json"
    tipbench = [sys.executable, "-m", "tipbench.cli"]
    store = ["--experiment", experiment, "--tracking-uri", mlflow_server.url]
    exported = subprocess.run(
        [*tipbench, "judge", "export", *store, "--out", str(judge_file), "--reveal"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    data = json.loads(judge_file.read_text())
    for item in data["items"]:
        for candidate in item["candidates"]:
            good = item["model"] == f"ollama:{GEMMA}"
            candidate["scores"].update(relevance=5 if good else 2, actionability=4, tone=4)
    judge_file.write_text(json.dumps(data))
    before = {run for run, _ in client.dag_runs("bench_judged")}
    env = {
        **os.environ,
        "TIPBENCH_AIRFLOW_URL": airflow.url,
        "TIPBENCH_AIRFLOW_PASSWORD_FILE": str(write_password(tmp_path, airflow)),
    }
    applied = subprocess.run(
        [*tipbench, "judge", "apply", *store, str(judge_file)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert "applied 2 runs" in applied.stdout
    assert "warning" not in applied.stderr
    assert airflow.admin_password() not in applied.stdout + applied.stderr

    def judged_run() -> str | None:
        new = [(run, s) for run, s in client.dag_runs("bench_judged") if run not in before]
        return new[0][0] if new else None

    judged = wait_for(judged_run, 300, "a bench_judged run after judge apply")
    state = wait_for(finished(client, "bench_judged", judged), 600, "bench_judged")
    assert state == "success", run_report(client, "bench_judged", judged)
    mlflow = MlflowClient(mlflow_server.url)
    exp = mlflow.get_experiment_by_name(experiment)
    assert exp is not None
    (decision,) = mlflow.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'promotion'")
    assert decision.data.tags["dry_run"] == "true"
    # one judged scenario is below the gate's minimum: a recorded refusal, nothing applied
    assert decision.data.tags["decision"] == "refused"
    assert "production_version" not in decision.data.tags
    artifacts = {a.path for a in mlflow.list_artifacts(decision.info.run_id)}
    assert "decision.json" in artifacts


def test_install_dags_unpauses_them_through_the_rest_api(
    airflow: AirflowStandalone, client: AirflowClient, tmp_path: Path
) -> None:
    for dag_id in ("bench_collect", "bench_judged"):
        client.set_paused(dag_id, True)  # as new DAGs start
    env = {
        **airflow.env(),
        "TIPBENCH_AIRFLOW_URL": airflow.url,
        "TIPBENCH_AIRFLOW_PASSWORD_FILE": str(write_password(tmp_path, airflow)),
    }
    installed = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", str(airflow.home.dags)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert "unpaused bench_collect, bench_judged, policy_simulate" in installed.stdout
    assert not client.is_paused("bench_collect") and not client.is_paused("bench_judged")


def test_quick_asset_events_start_one_bench_judged_run_at_a_time(
    client: AirflowClient, tmp_path: Path, experiment: str
) -> None:
    """Three saves in a row (three events): runs never overlap, and the events that came
    during a run start one run together, not one each."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    make_promotable_experiment(uri, experiment)
    before = {run for run, _ in client.dag_runs("bench_judged")}
    for _ in range(3):
        client.post_asset_event("tipbench_judged", {"experiment": experiment, "mlflow_url": uri})
    most_at_once, quiet_since = 0, time.monotonic()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        runs = [(r, st) for r, st in client.dag_runs("bench_judged") if r not in before]
        active = [r for r, st in runs if st in ("queued", "running")]
        most_at_once = max(most_at_once, sum(st == "running" for _, st in runs))
        if active or not runs:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 20:  # all ended, and no new run for a while
            break
        time.sleep(1.0)
    assert runs and all(st == "success" for _, st in runs), runs
    assert most_at_once == 1
    assert len(runs) < 3  # the events that waited were consumed together
    exp = MlflowClient(uri).get_experiment_by_name(experiment)
    assert exp is not None
    kind = "tags.`tipbench.kind` = 'promotion'"
    assert len(MlflowClient(uri).search_runs([exp.experiment_id], kind)) == len(runs)


def write_password(folder: Path, airflow: AirflowStandalone) -> Path:
    path = folder / "airflow-password"
    path.write_text(airflow.admin_password())
    path.chmod(0o600)
    return path


def test_a_collect_task_killed_mid_grid_is_retried_without_duplicates(
    airflow: AirflowStandalone,
    client: AirflowClient,
    ollama: FakeOllama,
    sqlite_uri: str,
    experiment: str,
) -> None:
    ollama.delay_next(1.5, count=100)  # slow generations: the kill lands mid-grid
    conf = {
        "models": f"ollama:{QWEN}", "prompts": "v1,v2-mentor,v3-few-shot", "n_scenarios": 2,
        "n_tips": 2, "experiment": experiment, "ollama_url": ollama.url,
        "mlflow_url": sqlite_uri, "judge_model": f"ollama:{QWEN}",
    }  # fmt: skip
    run_id = client.trigger("bench_collect", conf)

    def collecting() -> str | None:
        (ti,) = [
            t for t in client.task_instances("bench_collect", run_id) if t.task_id == "collect"
        ] or [None]
        if ti is None or ti.state != "running":
            return None
        recorded = len(cells(sqlite_uri, experiment))
        return ti.id if 1 <= recorded < 6 else None

    ti_id = wait_for(collecting, 600, "collect to be half-way")
    pid = wait_for(lambda: task_process(ti_id), 30, "the collect task's process")
    os.kill(pid, signal.SIGKILL)
    ollama.clear_faults()  # the retry and the judge need not be slow

    state = wait_for(finished(client, "bench_collect", run_id), 900, "bench_collect")
    assert state == "success", run_report(client, "bench_collect", run_id)
    (collect,) = [
        t for t in client.task_instances("bench_collect", run_id) if t.task_id == "collect"
    ]
    assert collect.try_number >= 2  # Airflow retried it
    runs = cells(sqlite_uri, experiment)
    keys = [r.data.tags["cell_key"] for r in runs]  # type: ignore[attr-defined]
    assert len(runs) == 6 and len(set(keys)) == 6  # exactly one run per cell
    assert all(r.info.status == "FINISHED" for r in runs)  # type: ignore[attr-defined]


def test_cancelling_a_job_on_airflow_stops_its_task_and_fails_its_dag_run(
    airflow: AirflowStandalone,
    client: AirflowClient,
    ollama: FakeOllama,
    sqlite_uri: str,
    experiment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # answers slower than Airflow's stop takes to reach the task (a heartbeat or two)
    ollama.delay_next(10.0, count=50)
    monkeypatch.setenv("TIPBENCH_AIRFLOW_URL", airflow.url)
    monkeypatch.setenv("TIPBENCH_AIRFLOW_PASSWORD_FILE", str(write_password(tmp_path, airflow)))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    settings = ServerSettings(admin_token=SecretStr(TOKEN), secure_cookies=False)
    body = {"models": f"ollama:{QWEN}", "prompts": "v1,v2-mentor", "n_scenarios": 3,
            "n_tips": 2, "experiment": experiment, "ollama_url": ollama.url}  # fmt: skip
    with TestClient(create_app(settings), headers=AUTH) as api:
        job_id = api.post("/api/bench/run", json=body).json()["job_id"]
        run_id = api.get(f"/api/bench/jobs/{job_id}").json()["dag_run_id"]

        def collecting() -> str | None:
            tasks = client.task_instances("bench_collect", run_id)
            running = [t for t in tasks if t.task_id == "collect" and t.state == "running"]
            recorded = len(cells(sqlite_uri, experiment))
            return running[0].id if running and recorded >= 1 else None

        ti_id = wait_for(collecting, 600, "collect to record a cell")
        assert task_process(ti_id) is not None
        cancelled = api.post(f"/api/bench/jobs/{job_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        recorded_at_cancel = len(cells(sqlite_uri, experiment))
        again = api.post(f"/api/bench/jobs/{job_id}/cancel")
        assert again.status_code == 409

    # The task stops after its current request, as `tipbench run` on Ctrl-C: the model is
    # unloaded and the collection's parent run ends KILLED.
    wait_for(lambda: True if task_process(ti_id) is None else None, 60, "the task to stop")
    assert len(cells(sqlite_uri, experiment)) <= recorded_at_cancel + 1
    assert ollama.resident == set()
    mlflow = MlflowClient(sqlite_uri)
    exp = mlflow.get_experiment_by_name(experiment)
    assert exp is not None
    (parent,) = mlflow.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'collection'")
    assert parent.info.status == "KILLED"
    # The run stays failed once the scheduler has seen every task end (the end tasks skipped).
    state = wait_for(finished(client, "bench_collect", run_id), 300, "the run to end")
    tasks = {t.task_id: t.state for t in client.task_instances("bench_collect", run_id)}
    assert tasks["outcome"] == "failed" and tasks["compare"] == "skipped", tasks
    time.sleep(10)  # a few scheduler loops: nothing turns the run successful
    assert state == client.run_state("bench_collect", run_id) == "failed"
