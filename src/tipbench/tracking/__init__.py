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
from tipbench.tracking._writer import RunRecord, RunWriter, WriteFailure

__all__ = [
    "KIND_CELL",
    "KIND_COLLECTION",
    "KIND_TAG",
    "CellRun",
    "RunRecord",
    "RunWriter",
    "TrackingStore",
    "WriteFailure",
    "data_dir",
    "resolve_tracking_uri",
    "short_error",
]
