"""Tracking: the MLflow store behind every phase, and a writer that keeps it off the hot path."""

from tipbench.tracking._store import (
    KIND_CELL,
    KIND_COLLECTION,
    KIND_TAG,
    CellRun,
    TrackingStore,
    data_dir,
    resolve_tracking_uri,
    short_error,
)
from tipbench.tracking._writer import (
    BackgroundWriter,
    RunRecord,
    WriteFailure,
    WriteJob,
    log_texts,
    write_run,
)

__all__ = [
    "KIND_CELL",
    "KIND_COLLECTION",
    "KIND_TAG",
    "BackgroundWriter",
    "CellRun",
    "RunRecord",
    "TrackingStore",
    "WriteFailure",
    "WriteJob",
    "data_dir",
    "log_texts",
    "resolve_tracking_uri",
    "short_error",
    "write_run",
]
