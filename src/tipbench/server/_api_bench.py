"""`/api/bench`: experiments, their runs and their leaderboards (read-only)."""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel

from tipbench.compare import DEFAULT_MIN_SCENARIOS, leaderboards_for, to_json
from tipbench.judge import TIERS, Tier
from tipbench.server._coalesce import Coalescer
from tipbench.server._deps import ExperimentName, Store
from tipbench.tracking import KIND_CELL, KIND_TAG

router = APIRouter(prefix="/api/bench", tags=["bench"])


class Experiment(BaseModel):
    name: str
    experiment_id: str
    last_update_time: int | None


class CellRunSummary(BaseModel):
    run_id: str
    name: str
    model: str
    prompt_version: str
    scenario_id: str
    status: str
    cell_status: str
    judge_pending: bool
    composite: float | None
    auto_composite: float | None
    error: str | None


@router.get("/experiments", response_model=list[Experiment])
def list_experiments(store: Store) -> list[Experiment]:
    """The `tip-bench-*` experiments, most recently updated first."""
    found = store.client.search_experiments(
        filter_string="name LIKE 'tip-bench-%'", order_by=["last_update_time DESC"]
    )
    return [
        Experiment(name=e.name, experiment_id=e.experiment_id, last_update_time=e.last_update_time)
        for e in found
    ]


@router.get("/runs/{experiment}", response_model=list[CellRunSummary])
def list_runs(experiment: ExperimentName, store: Store) -> list[CellRunSummary]:
    """The cell runs of an experiment, with their status and composite scores."""
    experiment_id = store.experiment_id(experiment)
    runs = store.search(experiment_id, f"tags.`{KIND_TAG}` = '{KIND_CELL}'")
    return [
        CellRunSummary(
            run_id=run.info.run_id,
            name=run.info.run_name or "",
            model=run.data.params.get("model", ""),
            prompt_version=run.data.params.get("prompt_version", ""),
            scenario_id=run.data.params.get("scenario_id", ""),
            status=run.info.status,
            cell_status=run.data.tags.get("cell_status", ""),
            judge_pending=run.data.tags.get("judge_pending") == "true",
            composite=run.data.metrics.get("composite"),
            auto_composite=run.data.metrics.get("auto_composite"),
            error=run.data.tags.get("error"),
        )
        for run in runs
    ]


_leaderboards = Coalescer()


@router.get("/leaderboard/{experiment}")
async def leaderboard(
    experiment: ExperimentName,
    store: Store,
    tier: Literal["human", "auto", "both"] = "both",
    min_scenarios: int = Query(DEFAULT_MIN_SCENARIOS, ge=1, le=1000),
) -> Any:
    """Exactly what `tipbench compare --format json` prints for the same options."""
    tiers: tuple[Tier, ...] = TIERS if tier == "both" else (tier,)

    def compute() -> Any:
        return json.loads(to_json(leaderboards_for(store, experiment, tiers, min_scenarios)))

    return await _leaderboards.run((store.uri, experiment, tiers, min_scenarios), compute)
