"""Reading what collect recorded: the judgeable cell runs and their `candidates.json`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tipbench.collect import CANDIDATES_FILE
from tipbench.tracking import KIND_CELL, KIND_TAG, TrackingStore

if TYPE_CHECKING:
    from mlflow.entities import Run

_DOWNLOAD_THREADS = 8


@dataclass(frozen=True)
class CellCandidates:
    """One cell run's candidates as collect recorded them."""

    run_id: str
    model: str
    prompt_version: str
    scenario: dict[str, Any]
    candidates: tuple[dict[str, Any], ...]  # {"id", "text", "format_ok", "overlong"}


def judgeable_runs(store: TrackingStore, experiment_id: str, extra_filter: str = "") -> list[Run]:
    """The successful cell runs of an experiment (optionally narrowed by a filter clause)."""
    clause = f"tags.`{KIND_TAG}` = '{KIND_CELL}' AND tags.cell_status = 'ok'"
    if extra_filter:
        clause += f" AND {extra_filter}"
    return list(store.search(experiment_id, clause))


def candidate_count(run: Run) -> int:
    return int(run.data.metrics.get("candidate_count", 0))


def fetch_rubric(store: TrackingStore, run: Run) -> tuple[str, str]:
    """The id and text of the rubric stored with a run (`rubric.md`)."""
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        path = store.client.download_artifacts(run.info.run_id, "rubric.md", tmp)
        text = Path(path).read_text(encoding="utf-8")
    return run.data.tags.get("rubric", ""), text


def fetch_candidates(store: TrackingStore, runs: Iterable[Run]) -> list[CellCandidates]:
    """Download `candidates.json` of each run (in parallel), in the order given."""

    def fetch(run: Run) -> CellCandidates:
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            path = store.client.download_artifacts(run.info.run_id, CANDIDATES_FILE, tmp)
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        return CellCandidates(
            run_id=run.info.run_id,
            model=run.data.params.get("model", ""),
            prompt_version=run.data.params.get("prompt_version", ""),
            scenario=document["scenario"],
            candidates=tuple(document["candidates"]),
        )

    with ThreadPoolExecutor(_DOWNLOAD_THREADS) as pool:
        return list(pool.map(fetch, runs))
