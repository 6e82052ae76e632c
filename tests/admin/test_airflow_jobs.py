"""The admin API's Airflow path when Airflow cannot be reached, and the subprocess default.

The full path (trigger, progress, cancel, leaderboard) runs against a real `airflow
standalone` in tests/orchestration/test_airflow_rest.py.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from support.servers import free_port
from tipbench import ConfigError
from tipbench._progress_events import PhaseStarted, StepDone, TotalKnown, event_line
from tipbench.admin import ServerSettings, create_app
from tipbench.admin._airflow_jobs import AirflowJobRunner, counts_in, describe, progress_of
from tipbench.admin._api_jobs import runner_for
from tipbench.admin._job_runner import JobRunner
from tipbench.admin._jobs import _SCHEMA, JobConflict, JobStore, Progress
from tipbench.orchestration import AirflowClient, AirflowSettings, TaskInstance, param_specs
from tipbench.pipeline import RunRequest

TOKEN = "airflow-jobs-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "the-airflow-password-9f8e7d"


def settings() -> ServerSettings:
    return ServerSettings(admin_token=SecretStr(TOKEN), secure_cookies=False, run_jobs=False)


def test_airflow_unreachable_is_503_and_nothing_is_queued(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TIPBENCH_AIRFLOW_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("TIPBENCH_AIRFLOW_PASSWORD", SECRET)
    with TestClient(create_app(settings()), headers=AUTH) as api:
        refused = api.post("/api/bench/run", json={"n_scenarios": 1})
        assert refused.status_code == 503
        detail = refused.json()["detail"]
        assert "cannot be reached" in detail and "nothing was queued" in detail
        assert api.get("/api/bench/jobs").json() == []
        assert isinstance(runner_for(api.app), AirflowJobRunner)  # type: ignore[arg-type]
    assert SECRET not in refused.text + caplog.text


def test_a_bad_body_is_refused_before_airflow_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIPBENCH_AIRFLOW_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("TIPBENCH_AIRFLOW_PASSWORD", SECRET)
    with TestClient(create_app(settings()), headers=AUTH) as api:
        refused = api.post("/api/bench/run", json={"n_tips": 0})
        assert refused.status_code == 422


def test_airflow_url_without_a_password_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIPBENCH_AIRFLOW_URL", "http://127.0.0.1:8080")
    monkeypatch.delenv("TIPBENCH_AIRFLOW_PASSWORD", raising=False)
    with (
        pytest.raises(ConfigError, match="TIPBENCH_AIRFLOW_PASSWORD"),
        TestClient(create_app(settings()), headers=AUTH),
    ):
        pass


def test_without_the_variable_jobs_run_as_subprocesses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIPBENCH_AIRFLOW_URL", raising=False)
    app = create_app(settings())
    assert isinstance(runner_for(app), JobRunner)


def test_progress_counts_mapped_collect_tasks_and_names_the_running_task() -> None:
    tasks = [
        TaskInstance("plan", -1, "success"),
        TaskInstance("collect", 0, "success"),
        TaskInstance("collect", 1, "running"),
        TaskInstance("collect", 2, "up_for_reschedule"),
        TaskInstance("judge_auto", -1, None),
    ]
    progress = progress_of(tasks, Progress(cells_total=12))
    assert progress == Progress(phase="collect", cells_total=12, models_done=1, models_total=3)
    assert describe(tasks) == (
        "plan success, collect[0] success, collect[1] running, "
        "collect[2] up_for_reschedule, judge_auto -"
    )


def test_cells_and_candidates_done_come_from_the_tasks_progress_events() -> None:
    """Lines as Airflow's log API returns them: each message, the event's JSON inside."""
    fourth = event_line(StepDone(unit="cells", done=4, total=6, item="m|v1|b"))
    cells = [
        event_line(PhaseStarted(phase="collect")),
        "loading ollama:qwen2.5:0.5b",
        event_line(TotalKnown(unit="cells", total=6, done=2)),
        event_line(StepDone(unit="cells", done=3, total=6, item="m|v1|a")),
        f"[2026-11-26T03:00:00Z] INFO {fourth}",
        '{"v": 2, "event": "step"}',  # another format version: not counted
    ]
    assert counts_in(cells) == {"cells": (4, 6)}
    tasks = [
        TaskInstance("collect", 0, "success", label="ollama:a"),
        TaskInstance("collect", 1, "running", label="ollama:b"),
        TaskInstance("judge_auto", -1, None),
    ]
    counts = {"cells": (10, 12), "candidates": (0, 0)}
    progress = progress_of(tasks, Progress(cells_total=12), counts)
    assert (progress.cells_done, progress.cells_total, progress.judged) == (10, 12, 0)
    assert describe(tasks) == "collect[ollama:a] success, collect[ollama:b] running, judge_auto -"


def test_old_job_databases_gain_the_airflow_columns(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "jobs.sqlite"
    with sqlite3.connect(path) as db:  # the first schema, before jobs could run on Airflow
        db.executescript(_SCHEMA)
    JobStore(path, tmp_path / "logs")
    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
    assert {"dag_run_id", "remote_url", "models_done", "models_total"} <= columns


class StoppingRun:
    """Airflow as a cancel meets it: `PATCH dagRuns/{id} {"state": "failed"}` is accepted
    while the run still answers `running`; it reports `failed` once its tasks have stopped
    (`stop()`). A small fake of `AirflowClient`; the real path is in
    tests/orchestration/test_airflow_rest.py."""

    def __init__(self) -> None:
        self.state, self.marked_failed = "running", 0

    def fail_run(self, dag_id: str, run_id: str) -> None:
        self.marked_failed += 1

    def stop(self) -> None:
        self.state = "failed"

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.state

    def task_instances(self, dag_id: str, run_id: str) -> list[TaskInstance]:
        collect = "running" if self.state == "running" else "failed"
        return [TaskInstance("plan", -1, "success"), TaskInstance("collect", 0, collect)]

    def task_log(self, dag_id: str, run_id: str, task: TaskInstance) -> list[str]:
        return []

    def close(self) -> None:
        pass


def test_a_cancel_says_cancelling_until_airflow_reports_the_run_ended(tmp_path: Path) -> None:
    from tipbench.admin._api_jobs import JobStatus
    from tipbench.pipeline import RunRequest

    airflow = StoppingRun()
    store = JobStore(tmp_path / "jobs.sqlite", tmp_path / "logs")
    runner = AirflowJobRunner(store, airflow, tracking_uri="sqlite:///x.db")  # type: ignore[arg-type]
    job = store.create(RunRequest(n_scenarios=1), dag_run_id="manual__1", remote_url="u")

    answer = JobStatus.of(runner.cancel(job.id, wait_s=0.0))
    assert airflow.marked_failed == 1
    assert (answer.state, answer.phase, answer.cancellable) == ("running", "cancelling", False)
    with pytest.raises(JobConflict, match="cancelling already"):
        runner.cancel(job.id)
    assert runner.refresh(store.get(job.id)).progress.phase == "cancelling"  # tasks still run

    airflow.stop()
    ended = JobStatus.of(runner.refresh(store.get(job.id)))
    assert (ended.state, ended.cancellable, ended.error) == ("cancelled", False, None)
    log = runner.log(job.id)
    assert "run marked failed, waiting for Airflow to stop its tasks" in log
    assert "bench_collect run ended: cancelled" in log


def test_a_run_requests_conf_is_what_bench_collects_params_accept(tmp_path: Path) -> None:
    """Every list goes to Airflow comma-separated, an empty one as "": a list sent as a list
    (the scenarios an optimization adds) made Airflow refuse every run from the panel with
    `[] is not of type 'string'`."""
    client = AirflowClient(AirflowSettings("http://127.0.0.1:1", "admin", SecretStr(SECRET)))
    runner = AirflowJobRunner(
        JobStore(tmp_path / "jobs.sqlite", tmp_path / "logs"), client, tracking_uri="sqlite:///x"
    )
    specs = param_specs()
    for request in (RunRequest(), RunRequest(scenarios=["student-evening"], n_scenarios=0)):
        conf = runner.conf(request)
        for name, value in conf.items():
            schema = {key: v for key, v in specs[name].items() if key != "default"}
            jsonschema.validate(value, schema)
    assert conf["scenarios"] == "student-evening"
    client.close()
