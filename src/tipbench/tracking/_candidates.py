"""Reading what collect recorded: the judgeable cell runs and their `candidates.json`.

A judgeable run is a finished one (`TrackingStore.cell_runs`): collect creates a cell's run
with its tags and stores its candidates after them, so a run still being written is never
read here. A finished run whose file cannot be read is a `TrackingError` naming the run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipbench._errors import TrackingError
from tipbench.tracking._cell_run import CellRun
from tipbench.tracking._layout import (
    CANDIDATES_FILE,
    RUBRIC_FILE,
    CandidatesFile,
    RecordedCandidate,
)
from tipbench.tracking._store import TrackingStore, short_error

_DOWNLOAD_THREADS = 8


@dataclass(frozen=True)
class CellCandidates:
    """One cell run's candidates as collect recorded them."""

    run_id: str
    model: str
    prompt_version: str
    scenario: dict[str, Any]
    candidates: tuple[RecordedCandidate, ...]


def fetch_rubric(store: TrackingStore, run: CellRun) -> tuple[str, str]:
    """The id and text of the rubric stored with a run (`rubric.md`)."""
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        path = store.client.download_artifacts(run.run_id, RUBRIC_FILE, tmp)
        text = Path(path).read_text(encoding="utf-8")
    return run.rubric, text


def fetch_candidates(store: TrackingStore, runs: Iterable[CellRun]) -> list[CellCandidates]:
    """Download `candidates.json` of each run (in parallel), in the order given.

    Raises:
        TrackingError: A run's file cannot be read (named, with MLflow's reason).
    """

    def fetch(run: CellRun) -> CellCandidates:
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            try:
                path = store.client.download_artifacts(run.run_id, CANDIDATES_FILE, tmp)
                document = CandidatesFile.model_validate_json(Path(path).read_bytes())
            except Exception as exc:
                raise TrackingError(
                    f"cannot read the candidates of run {run.run_id}: {short_error(exc)}"
                ) from exc
        return CellCandidates(
            run_id=run.run_id,
            model=run.model,
            prompt_version=run.prompt_version,
            scenario=document.scenario,
            candidates=document.candidates,
        )

    with ThreadPoolExecutor(_DOWNLOAD_THREADS) as pool:
        return list(pool.map(fetch, runs))
