"""Writing runs: `write_run`, the one writer of a whole run (or none, after a failure), and a
background writer that keeps MLflow off the hot path.

MLflow calls cost tens of milliseconds, so generation (or judging) hands finished work to
`BackgroundWriter.submit` and goes on; a worker thread performs the MLflow writes in
submission order, at a lower CPU priority than generation. A failed write is retried, then
recorded: it never stops the grid.
`record_run` writes one run now, for a command that records what it did (a leaderboard,
a promotion decision), and reports a failure as one line.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tipbench._errors import TrackingError
from tipbench.tracking._layout import PARENT_RUN_TAG
from tipbench.tracking._store import TrackingStore, short_error

if TYPE_CHECKING:
    from mlflow import MlflowClient

_WRITE_ATTEMPTS = 3
_BATCH_LIMIT = 100  # MLflow's log_batch takes at most 100 params (and 1,000 metrics) a call

WriteJob = Callable[["MlflowClient"], object]


@dataclass(frozen=True)
class RunRecord:
    """Everything one new MLflow run will hold, ready to write."""

    run_name: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    artifacts: dict[str, str]  # file name -> text
    files: dict[str, Path] = field(default_factory=dict)  # file name -> a file to copy as is
    status: str = "FINISHED"  # or "FAILED"
    start_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    end_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    replaces: tuple[str, ...] = ()  # stale runs of the same cell, deleted first
    series: dict[str, tuple[float, ...]] = field(default_factory=dict)  # metric → per step


@dataclass(frozen=True)
class WriteFailure:
    label: str
    error: str


class BackgroundWriter:
    """Runs write jobs against the store from one worker thread, in submission order."""

    def __init__(self, store: TrackingStore) -> None:
        self.store = store
        self.failures: list[WriteFailure] = []
        self._queue: queue.Queue[tuple[str, WriteJob] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="tipbench-writer", daemon=True)
        self._thread.start()

    def submit(self, label: str, job: WriteJob) -> None:
        """Queue `job(client)`; `label` names it in failure reports."""
        self._queue.put((label, job))

    def close(self) -> list[WriteFailure]:
        """Wait until everything submitted is written; return what could not be."""
        self._queue.put(None)
        self._thread.join()
        return self.failures

    def _work(self) -> None:
        _yield_cpu()
        while (item := self._queue.get()) is not None:
            label, job = item
            for attempt in range(1, _WRITE_ATTEMPTS + 1):
                try:
                    job(self.store.client)
                    break
                except Exception as exc:  # a tracking failure never kills the harness
                    if attempt == _WRITE_ATTEMPTS:
                        self.failures.append(WriteFailure(label, short_error(exc)))
                    else:
                        time.sleep(0.5 * attempt)


def _yield_cpu() -> None:
    """Lower this thread's CPU priority (nice +10; Linux sets it per thread), so that on a
    machine busy generating the writes wait for a free core, not the model's threads."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not allowed
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def log_texts(
    client: MlflowClient, run_id: str, files: dict[str, str], copies: dict[str, Path] | None = None
) -> None:
    """Log text files (and `copies` of files, as they are) as artifacts of a run, in one
    `log_artifacts` call (none when there is nothing to log)."""
    if not files and not copies:
        return
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        for name, text in files.items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for name, source in (copies or {}).items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, path)
        client.log_artifacts(run_id, tmp)


def write_run(
    client: MlflowClient, experiment_id: str, record: RunRecord, parent_run_id: str | None = None
) -> str:
    """Create one complete run (or none: a failed write deletes what it created)."""
    from mlflow.entities import Metric, Param

    for stale in record.replaces:
        with contextlib.suppress(Exception):  # already gone is fine
            client.delete_run(stale)
    tags = dict(record.tags)
    if parent_run_id:
        tags[PARENT_RUN_TAG] = parent_run_id
    run = client.create_run(
        experiment_id, start_time=record.start_ms, tags=tags, run_name=record.run_name
    )
    run_id: str = run.info.run_id
    try:
        metrics = [Metric(k, float(v), record.end_ms, 0) for k, v in record.metrics.items()]
        metrics += [
            Metric(k, float(v), record.end_ms, step)
            for k, values in record.series.items()
            for step, v in enumerate(values)
        ]
        params = [Param(k, v) for k, v in record.params.items()]
        for start in range(0, max(len(metrics), len(params), 1), _BATCH_LIMIT):
            client.log_batch(
                run_id,
                metrics=metrics[start : start + _BATCH_LIMIT],
                params=params[start : start + _BATCH_LIMIT],
            )
        log_texts(client, run_id, record.artifacts, record.files)
        client.set_terminated(run_id, status=record.status, end_time=record.end_ms)
    except BaseException:
        with contextlib.suppress(Exception):  # leave no half-written run behind
            client.delete_run(run_id)
        raise
    return run_id


def record_run(store: TrackingStore, experiment_id: str, record: RunRecord, what: str) -> str:
    """Write one complete run now (or none) and return its id.

    Raises:
        TrackingError: naming `what` could not be recorded, in one line.
    """
    try:
        return write_run(store.client, experiment_id, record)
    except Exception as exc:
        raise TrackingError(
            f"cannot record {what} at {store.shown_uri}: {short_error(exc)}"
        ) from None
