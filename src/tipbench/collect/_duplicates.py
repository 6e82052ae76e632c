"""Duplicates already in a store: found, resolved to one run per cell, and reported.

Before the experiment lock existed, two collections at once could record the same cell
twice, and start two parent runs for the same grid. The next collection repairs that: of
the runs of one cell it keeps the most valuable (human-judged first, then auto-judged, then
a successful one, then the newest) and deletes the others (MLflow keeps deleted runs
restorable until garbage collection); of the parent runs of one grid it keeps the oldest
and moves the cell runs of the others under it.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipbench.tracking import (
    CELL_RUNS,
    KIND_COLLECTION,
    KIND_TAG,
    PARENT_RUN_TAG,
    TrackingStore,
    metric_name,
)

if TYPE_CHECKING:
    from mlflow.entities import Run


@dataclass(frozen=True)
class DuplicateReport:
    """What the repair found and did.

    Attributes:
        cells: Cells that had more than one run.
        removed_runs: Cell runs deleted (one per duplicate).
        parents: Grids that had more than one parent run.
        removed_parents: Parent runs merged into the oldest one and deleted.
    """

    cells: int = 0
    removed_runs: int = 0
    parents: int = 0
    removed_parents: int = 0

    def __bool__(self) -> bool:
        return bool(self.removed_runs or self.removed_parents)


def _value(run: Run) -> tuple[bool, bool, bool, int]:
    """How much a run of a cell is worth keeping: judged, then successful, then newest."""
    metrics, tags = run.data.metrics, run.data.tags
    return (
        metric_name("human", "composite") in metrics,
        metric_name("auto", "composite") in metrics,
        run.info.status == "FINISHED" and tags.get("cell_status") == "ok",
        int(run.info.end_time or run.info.start_time or 0),
    )


def _groups(runs: Iterable[Run], tag: str) -> list[list[Run]]:
    by_key: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if key := run.data.tags.get(tag):
            by_key[key].append(run)
    return [group for group in by_key.values() if len(group) > 1]


def resolve_duplicates(store: TrackingStore, experiment_id: str) -> DuplicateReport:
    """Leave one run per cell key and one parent run per grid in the experiment.

    Call it while holding the experiment's lock: a collection running at the same time
    could otherwise be writing the runs this deletes.

    Raises:
        TrackingError: If the store cannot be searched.
    """
    client = store.client
    cells = list(store.search(experiment_id, CELL_RUNS))
    removed = 0
    duplicated = _groups(cells, "cell_key")
    for group in duplicated:
        keep = max(group, key=_value)
        for run in group:
            if run is not keep:
                with contextlib.suppress(Exception):
                    client.delete_run(run.info.run_id)
                    removed += 1
    parents = _groups(
        store.search(experiment_id, f"tags.`{KIND_TAG}` = '{KIND_COLLECTION}'"), "parent_key"
    )
    merged = 0
    for group in parents:
        keep = min(group, key=lambda run: (run.info.start_time or 0, run.info.run_id))
        extra = {run.info.run_id for run in group if run is not keep}
        for cell in cells:
            if cell.data.tags.get(PARENT_RUN_TAG) in extra:
                with contextlib.suppress(Exception):
                    client.set_tag(cell.info.run_id, PARENT_RUN_TAG, keep.info.run_id)
        for run_id in extra:
            with contextlib.suppress(Exception):
                client.delete_run(run_id)
                merged += 1
    return DuplicateReport(len(duplicated), removed, len(parents), merged)
