"""A real Airflow for tests: `AirflowHome` and `AirflowStandalone` (the whole of Airflow,
`airflow standalone`, on a loopback port), shared with the benchmarks in
`tipbench_dev.airflow`; and the waits the real-Airflow tests share."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TypeVar

from tipbench.orchestration import AirflowClient, AirflowError, AirflowUnavailable
from tipbench_dev.airflow import AirflowHome, AirflowStandalone, DagTestRun, task_process

__all__ = [
    "AirflowHome",
    "AirflowStandalone",
    "DagTestRun",
    "finished",
    "run_report",
    "task_process",
    "wait_for",
    "wait_for_dags",
]

T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """The first value `check` returns other than None, polled every 2 s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(AirflowUnavailable):  # a busy API server may time out
            if (value := check()) is not None:
                return value
        time.sleep(2.0)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_dags(client: AirflowClient) -> None:
    """Until the dag processor has parsed tipbench's DAGs (the API knows them)."""

    def parsed() -> bool | None:
        try:
            client.dag_runs("bench_collect")
            client.dag_runs("bench_judged")
        except AirflowError:
            return None
        return True

    wait_for(parsed, 300, "the dag processor to parse tipbench's DAGs")


def finished(client: AirflowClient, dag_id: str, run_id: str) -> Callable[[], str | None]:
    """A check for `wait_for`: the run's final state once it has one."""

    def check() -> str | None:
        state = client.run_state(dag_id, run_id)
        return state if state in ("success", "failed") else None

    return check


def run_report(client: AirflowClient, dag_id: str, run_id: str, lines: int = 25) -> str:
    """What a failed run's assertion shows: each task instance's state and try, and the
    end of the log of each one that did not succeed."""
    parts = []
    for ti in client.task_instances(dag_id, run_id):
        parts.append(f"{ti.task_id}[{ti.map_index}] {ti.state} (try {ti.try_number})")
        if ti.state != "success":
            parts.extend(f"    {line}" for line in client.task_log(dag_id, run_id, ti)[-lines:])
    return "\n".join(parts)
