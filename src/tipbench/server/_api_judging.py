"""`/api/bench/judging`: what the judging page needs, saved through `judge apply`'s checks."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter
from pydantic import BaseModel

from tipbench.judge import apply_judgements
from tipbench.judge._candidates import (
    candidate_count,
    fetch_candidates,
    judgeable_runs,
)
from tipbench.judge._file import Item, JudgeFile, RubricRef
from tipbench.judge._human import judge_file_for
from tipbench.server._deps import ExperimentName, Store

router = APIRouter(prefix="/api/bench/judging", tags=["judging"])

PENDING = "tags.judge_pending = 'true'"


class NextItem(BaseModel):
    """The next pending run to judge, and how much is left."""

    remaining_runs: int
    remaining_candidates: int
    rubric: RubricRef | None
    item: Item | None


class Saved(BaseModel):
    applied: int
    unchanged: int
    incomplete: int
    remaining_runs: int
    remaining_candidates: int


@router.get("/{experiment}/next", response_model=NextItem)
def next_item(experiment: ExperimentName, store: Store) -> NextItem:
    """The first pending run (by name) with its scenario, candidates and the rubric."""
    experiment_id = store.experiment_id(experiment)
    pending = sorted(
        judgeable_runs(store, experiment_id, PENDING), key=lambda r: r.info.run_name or ""
    )
    remaining = sum(candidate_count(run) for run in pending)
    if not pending:
        return NextItem(remaining_runs=0, remaining_candidates=0, rubric=None, item=None)
    first = pending[0]
    judge_file = judge_file_for(store, experiment, [first], fetch_candidates(store, [first]))
    return NextItem(
        remaining_runs=len(pending),
        remaining_candidates=remaining,
        rubric=judge_file.rubric,
        item=judge_file.items[0],
    )


@router.post("/{experiment}/scores", response_model=Saved)
def save_scores(experiment: ExperimentName, item: Item, store: Store, judge: str = "web") -> Saved:
    """Save one run's scores, validated exactly as `tipbench judge apply` validates a file."""
    judge_file = JudgeFile(
        experiment=experiment,
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        rubric=RubricRef(id="", text=""),
        items=[item],
    )
    result = apply_judgements(store, experiment, judge_file, judge, source="scores")
    pending = judgeable_runs(store, store.experiment_id(experiment), PENDING)
    return Saved(
        applied=result.applied,
        unchanged=result.unchanged,
        incomplete=result.incomplete,
        remaining_runs=len(pending),
        remaining_candidates=sum(candidate_count(run) for run in pending),
    )
