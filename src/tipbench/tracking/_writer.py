"""A background writer: MLflow calls cost tens of milliseconds, so they run off the hot path.

Generation hands finished cells to `RunWriter.submit` and goes on; a worker thread
writes each one as a run (create, one batch of params/metrics/tags, artifacts, end).
A failed write is retried, then recorded: it never stops the grid.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tipbench.tracking._store import TrackingStore, short_error

_WRITE_ATTEMPTS = 3


@dataclass(frozen=True)
class RunRecord:
    """Everything one MLflow run will hold, ready to write."""

    run_name: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    artifacts: dict[str, str]  # file name -> text
    status: str = "FINISHED"  # or "FAILED"
    start_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    end_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    replaces: tuple[str, ...] = ()  # stale runs of the same cell, deleted first


@dataclass(frozen=True)
class WriteFailure:
    record: RunRecord
    error: str


class RunWriter:
    """Writes `RunRecord`s under a parent run from a worker thread, in submission order."""

    def __init__(
        self,
        store: TrackingStore,
        experiment_id: str,
        parent_run_id: str | None = None,
        on_written: Callable[[RunRecord], None] | None = None,
    ) -> None:
        self.store = store
        self.experiment_id = experiment_id
        self.parent_run_id = parent_run_id
        self.on_written = on_written
        self.failures: list[WriteFailure] = []
        self.written = 0
        self._queue: queue.Queue[RunRecord | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="tipbench-writer", daemon=True)
        self._thread.start()

    def submit(self, record: RunRecord) -> None:
        self._queue.put(record)

    def close(self) -> list[WriteFailure]:
        """Wait until everything submitted is written; return what could not be."""
        self._queue.put(None)
        self._thread.join()
        return self.failures

    def _work(self) -> None:
        while (record := self._queue.get()) is not None:
            error = ""
            for attempt in range(1, _WRITE_ATTEMPTS + 1):
                try:
                    self.write(record)
                    break
                except Exception as exc:  # a tracking failure never kills the harness
                    error = short_error(exc)
                    time.sleep(0.5 * attempt)
            else:
                self.failures.append(WriteFailure(record, error))
                continue
            self.written += 1
            if self.on_written is not None:
                self.on_written(record)

    def write(self, record: RunRecord) -> str:
        """Write one run now (in the calling thread); return its id."""
        from mlflow.entities import Metric, Param, RunTag

        client = self.store.client
        for stale in record.replaces:
            with contextlib.suppress(Exception):  # already gone is fine
                client.delete_run(stale)
        tags = dict(record.tags)
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        run = client.create_run(
            self.experiment_id, start_time=record.start_ms, tags=tags, run_name=record.run_name
        )
        run_id: str = run.info.run_id
        try:
            client.log_batch(
                run_id,
                metrics=[Metric(k, float(v), record.end_ms, 0) for k, v in record.metrics.items()],
                params=[Param(k, v) for k, v in record.params.items()],
                tags=[RunTag(k, v) for k, v in tags.items()],
            )
            with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
                for name, text in record.artifacts.items():
                    (Path(tmp) / name).write_text(text, encoding="utf-8")
                client.log_artifacts(run_id, tmp)
            client.set_terminated(run_id, status=record.status, end_time=record.end_ms)
        except BaseException:
            with contextlib.suppress(Exception):  # leave no half-written run behind
                client.delete_run(run_id)
            raise
        return run_id
