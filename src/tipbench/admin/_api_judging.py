"""`/api/bench/judging`: what the judging page needs, saved through `judge apply`'s checks.

A save sends the run's scores with the version of them it loaded; it is refused (409) if
someone scored the run since, as `judge apply` refuses a stale file. Partial scores are
saved as a draft, exactly as a partly scored judge file.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from tipbench.admin._deps import ExperimentName, Store
from tipbench.human_tier import (
    Item,
    JudgeFile,
    JudgingStatus,
    RubricRef,
    apply_judgements,
    experiment_seed,
    item_numbers,
    judge_file_for,
    judging_state,
    judging_status,
    next_run,
)
from tipbench.orchestration import announce_judged
from tipbench.pipeline import scores_written
from tipbench.tracking import SOURCE_PAGE, fetch_candidates

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/bench/judging", tags=["judging"])

JUDGE_NAME_MAX = 64  # the judging page's "Judged by" field has the same cap


class Judging(BaseModel):
    """How the human judging stands for the combined tier (see `compare.judging_status`)."""

    order: str | None = Field(description="The experiment's judging order: active or uniform.")
    decided: bool = Field(description="The leader is decided: more judging changes nothing.")
    expected_more: int | None = Field(description="About how many more judgments it needs.")
    message: str = Field(description='"the leader is decided: you can stop", or what is left.')
    detectable: str = Field(
        default="",
        description="The smallest gap the gate can detect on these scenarios with every run "
        "judged (empty where they cannot decide at all).",
    )

    @classmethod
    def of(cls, status: JudgingStatus) -> Judging:
        return cls(
            order=status.order,
            decided=status.decided,
            expected_more=status.expected_more,
            message=status.message,
            detectable=status.detectable,
        )


class NextItem(BaseModel):
    """The next pending run to judge, and how much is left.

    `number` is the run's item number of `total` (`judge.item_numbers`, blind): what the
    page shows instead of the run id, and the `item` a judge file gives the same run. The
    run is the one the experiment's judging order serves next (an active order starts if
    none did).
    """

    remaining_runs: int
    remaining_candidates: int
    number: int | None = None
    total: int = 0
    rubric: RubricRef | None
    item: Item | None
    judging: Judging | None = None


class ScoredItem(Item):
    """A run's scores as the page saves them: with the version of them it loaded."""

    scores_version: Annotated[int, Field(ge=0, strict=True)] = Field(
        description="The run's `scores_version` as `GET …/next` gave it (refused if it "
        "changed since)."
    )


class Saved(BaseModel):
    applied: int
    drafted: int
    unchanged: int
    incomplete: int
    scores_version: int = Field(description="The run's version now: send it with the next save.")
    remaining_runs: int
    remaining_candidates: int
    judging: Judging | None = None


@router.get("/{experiment}/next", response_model=NextItem)
def next_item(experiment: ExperimentName, store: Store, reveal: bool = False) -> NextItem:
    """The next pending run with its scenario, candidates (drafts filled in), the rubric
    and the version of its human scores.

    Blind unless `reveal`: no model or prompt version, runs in the experiment's judging
    order and candidates shuffled (seeded by the experiment, so every request agrees).
    """
    seed = None if reveal else experiment_seed(experiment)
    state = judging_state(store, experiment)
    numbers = item_numbers(experiment, state.runs)
    runs = sorted(state.runs, key=lambda r: r.name if seed is None else numbers[r.run_id])
    pending = [run for run in runs if run.judge_pending]
    remaining = sum(run.candidate_count for run in pending)
    judging = Judging.of(judging_status(state))
    if not pending:
        return NextItem(
            remaining_runs=0,
            remaining_candidates=0,
            total=len(runs),
            rubric=None,
            item=None,
            judging=judging,
        )
    first = pending[0] if reveal else next_run(state) or pending[0]
    judge_file = judge_file_for(
        store,
        experiment,
        [first],
        fetch_candidates(store, [first]),
        reveal=reveal,
        seed=seed,
        numbers=numbers,
    )
    return NextItem(
        remaining_runs=len(pending),
        remaining_candidates=remaining,
        number=numbers[first.run_id],
        total=len(runs),
        rubric=judge_file.rubric,
        item=judge_file.items[0],
        judging=judging,
    )


@router.post(
    "/{experiment}/scores",
    response_model=Saved,
    responses={409: {"description": "The run was scored by someone else since it was loaded."}},
)
def save_scores(
    experiment: ExperimentName,
    item: ScoredItem,
    store: Store,
    judge: str = Query(
        "web", min_length=1, max_length=JUDGE_NAME_MAX, pattern=r"^[^\x00-\x1f\x7f]+$"
    ),
    force: bool = Query(False, description="Save over a newer version (it stays in history)."),
) -> Saved:
    """Save one run's scores, validated exactly as `tipbench judge apply` validates a file:
    complete scores are recorded, partial ones kept as a draft (the run stays pending)."""
    judge_file = JudgeFile(
        experiment=experiment,
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        rubric=RubricRef(id="", text=[]),
        items=[Item.model_validate(item.model_dump())],
    )
    result = apply_judgements(
        store, experiment, judge_file, judge, source="scores", force=force, written_from=SOURCE_PAGE
    )
    if result.refused:
        current = result.refused[0].current
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"scored since you loaded it ({current.describe()}): reload to see those scores",
        )
    if result.failed:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"not saved: {result.failed[0][1]}"
        )
    if result.applied or result.drafted:
        after = scores_written(
            store, experiment, final=bool(result.applied), announce=announce_judged
        )
        for warning in after.warnings:
            logger.warning("%s", warning)  # the scores are saved either way
    state = judging_state(store, experiment, start=False)
    pending = [run for run in state.runs if run.judge_pending]
    return Saved(
        applied=result.applied,
        drafted=result.drafted,
        unchanged=result.unchanged,
        incomplete=result.incomplete,
        scores_version=result.versions.get(item.run_id, item.scores_version),
        remaining_runs=len(pending),
        remaining_candidates=sum(run.candidate_count for run in pending),
        judging=Judging.of(judging_status(state)),
    )
