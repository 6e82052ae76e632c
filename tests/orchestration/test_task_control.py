"""How the DAGs' tasks stop, time out and fail: Airflow's own exceptions and signals, with
tipbench's errors and the embedded model."""

from __future__ import annotations

import logging
import os
import signal
import threading
from datetime import timedelta
from types import FrameType, SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowTaskTerminated
from mlflow import MlflowClient

from tipbench import ConfigError, ExperimentNotFound, ModelNotFound, TrackingError
from tipbench.orchestration._conf import read_conf
from tipbench.orchestration._phases import (
    PhaseFailed,
    approval_request,
    collect_model,
    compare,
    judged_requests,
    promotion_gate,
    run_outcome,
)
from tipbench.orchestration._task_control import (
    BASE_TIMEOUT,
    PER_CELL,
    failing_at_once,
    set_timeout,
    stoppable,
)


def test_sigterm_runs_airflows_handler_then_stops_the_task_without_retry() -> None:
    heard: list[int] = []

    def airflows(signum: int, frame: FrameType | None) -> None:  # calls the task's on_kill
        heard.append(signum)

    previous = signal.signal(signal.SIGTERM, airflows)
    try:
        with pytest.raises(AirflowTaskTerminated, match="stopped by Airflow"), stoppable():
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(5)  # the signal interrupts this
            raise AssertionError("not stopped")
        assert heard == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is airflows  # restored
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize(
    "error",
    [
        ConfigError("prompts: unknown prompt version 'v9'"),
        ExperimentNotFound("no experiment"),
        ModelNotFound("llamacpp:/models/x.gguf: no such file"),
    ],
)
def test_errors_a_retry_cannot_fix_fail_at_once_with_their_line(error: Exception) -> None:
    def work() -> None:
        raise error

    with pytest.raises(AirflowFailException) as failed:
        failing_at_once(work)
    assert str(failed.value).startswith(str(error))
    assert "\n" not in str(failed.value)


@pytest.mark.parametrize(
    "error", [TrackingError("store down"), PhaseFailed("2 cells of x not recorded")]
)
def test_transient_errors_are_left_to_airflows_retries(error: Exception) -> None:
    def work() -> None:
        raise error

    with pytest.raises(type(error)):
        failing_at_once(work)


def test_a_missing_gguf_fails_its_collect_task_with_one_line_naming_it(
    sqlite_uri: str, experiment: str
) -> None:
    conf = read_conf({"experiment": experiment, "prompts": "v1", "n_scenarios": 1})
    missing = "llamacpp:/nowhere/model-q4.gguf"
    with pytest.raises(AirflowFailException) as failed:
        failing_at_once(lambda: collect_model(conf.model_dump(mode="json"), missing, sqlite_uri))
    assert str(failed.value).startswith(f"{missing}: no such file (on ")


def context_of(task_id: str, conf: dict[str, object]) -> dict[str, object]:
    task = SimpleNamespace(task_id=task_id, execution_timeout=timedelta(minutes=10))
    return {"task": task, "params": {}, "dag_run": SimpleNamespace(conf=conf)}


def test_each_task_gets_a_time_limit_scaled_to_its_cells_or_the_confs() -> None:
    grid = {"models": "ollama:a,ollama:b", "prompts": "v1,v2-mentor", "n_scenarios": 3}
    limits = {}
    for task_id in ("plan", "collect", "judge_auto", "compare"):
        context = context_of(task_id, grid)
        set_timeout(context)
        limits[task_id] = context["task"].execution_timeout  # type: ignore[attr-defined]
    assert limits == {
        "plan": BASE_TIMEOUT,
        "collect": BASE_TIMEOUT + 6 * PER_CELL,  # one model's block
        "judge_auto": BASE_TIMEOUT + 12 * PER_CELL,
        "compare": BASE_TIMEOUT,
    }
    context = context_of("collect", {**grid, "timeout_minutes": 90})
    set_timeout(context)
    assert context["task"].execution_timeout == timedelta(minutes=90)  # type: ignore[attr-defined]


def test_a_run_fails_unless_every_task_succeeded() -> None:
    run_outcome({"plan": "success", "collect_0": "success", "outcome": None}, own="outcome")
    cancelled = {"plan": "success", "collect_0": "failed", "judge_auto": "skipped",
                 "compare": "skipped", "outcome": "running"}  # fmt: skip
    with pytest.raises(PhaseFailed, match="collect_0 failed, compare skipped, judge_auto skipped"):
        run_outcome(cancelled, own="outcome")


@pytest.mark.slow
def test_a_stopped_collect_ends_its_parent_run_killed(sqlite_uri: str, experiment: str) -> None:
    """The embedded model, stopped by SIGTERM once a cell is done: the parent run ends KILLED."""
    conf = read_conf({"experiment": experiment, "prompts": "v1,v2-mentor", "n_scenarios": 3,
                      "n_tips": 2}).model_dump(mode="json")  # fmt: skip

    class StopAfterACell(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "smollm2-135m|v" in record.getMessage() and not stops:
                stops.append(record.getMessage())
                os.kill(os.getpid(), signal.SIGTERM)

    stops: list[str] = []
    events = logging.getLogger("tipbench.orchestration")
    handler, level = StopAfterACell(), events.level
    events.addHandler(handler)
    events.setLevel(logging.INFO)
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with pytest.raises(AirflowTaskTerminated), stoppable():
            collect_model(conf, "llamacpp:smollm2-135m", sqlite_uri)
    finally:
        events.removeHandler(handler)
        events.setLevel(level)
        signal.signal(signal.SIGTERM, previous)
    assert len(stops) == 1
    client = MlflowClient(sqlite_uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    (parent,) = client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'collection'")
    assert parent.info.status == "KILLED"


def test_bench_judged_coalesces_events_per_experiment_the_latest_winning(sqlite_uri: str) -> None:
    events = [
        {"experiment": "tip-bench-a", "apply": True, "mlflow_url": sqlite_uri},
        {"experiment": "tip-bench-b", "mlflow_url": sqlite_uri},
        {"experiment": "tip-bench-a", "apply": False, "mlflow_url": sqlite_uri},  # latest of a
    ]
    requests = judged_requests({"apply": False}, events)
    assert [(r["experiment"], r["apply"]) for r in requests] == [
        ("tip-bench-b", False),
        ("tip-bench-a", False),
    ]


def test_only_passing_promotions_asked_to_apply_wait_for_approval() -> None:
    conditions = [
        {"name": "judged enough", "passed": True, "figure": "8 scenarios"},
        {"name": "beats production", "passed": True, "figure": "-"},
    ]
    gate = {"experiment": "tip-bench-a", "promote": True, "model": "ollama:m",
            "prompt_version": "v2-mentor", "production": None, "decision_run": "r1",
            "conditions": conditions}  # fmt: skip
    refused = {**gate, "experiment": "tip-bench-b", "promote": False}
    assert approval_request([gate, refused], set()) is None
    assert approval_request([refused], {"tip-bench-b"}) is None
    pending = approval_request([gate, refused], {"tip-bench-a", "tip-bench-b"})
    assert pending is not None and pending["gates"] == [gate]
    assert "tip-bench-a: promote ollama:m | v2-mentor" in pending["body"]
    assert "- [x] **judged enough**: 8 scenarios" in pending["body"]


def test_bench_judged_on_a_missing_experiment_fails_at_once(sqlite_uri: str) -> None:
    """Not retried three times: a missing experiment does not appear on a retry."""
    for phase in (compare, lambda e, u: promotion_gate(e, u, apply=False)):
        with pytest.raises(AirflowFailException, match=r"^no experiment 'tip-bench-missing' at"):
            failing_at_once(lambda: phase("tip-bench-missing", sqlite_uri))  # noqa: B023
