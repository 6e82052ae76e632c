"""`/api/bench/online/{experiment}`: the online tier beside the bench panel's leaderboard.

What users did with each (model, prompt)'s tips, from the policy service's decision log (the
state of `TIPBENCH_POLICY_STATE_URL`, as the Policies page reads it), the agreement of the
experiment's judged tiers with it, and promote's dry run with its online condition: the
figures of `tipbench compare --tier online` and `tipbench promote --online-state-url`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from tipbench._redact import redact_uri
from tipbench.admin._deps import ExperimentName, Settings, Store
from tipbench.admin._settings import ServerSettings
from tipbench.compare import DEFAULT_MIN_SCENARIOS, leaderboards_for
from tipbench.online import (
    TrackedRuns,
    agreement,
    online_document,
    online_evidence,
    online_tier,
    served_state,
    state_log,
)
from tipbench.policy_service import default_state_url
from tipbench.promote import NOT_WORSE_ONLINE, promote
from tipbench.tracking import TrackingStore

router = APIRouter(prefix="/api/bench/online", tags=["bench"])
NOTHING_SERVED = (
    "Nothing served yet: the online tier reads the decision log of tipbench policy serve, "
    "whose candidates say where each tip came from."
)


def _online(experiment: str, settings: ServerSettings, store: TrackingStore) -> dict[str, Any]:
    shown = redact_uri(settings.policy_state_url or default_state_url())
    with served_state(settings.policy_state_url) as state:
        if state is None:
            return {"online": None, "promotion": None, "note": NOTHING_SERVED, "state_url": shown}
        log, runs = state_log(state), TrackedRuns(store)
        tier = online_tier(log, runs=runs)
        boards = leaderboards_for(store, experiment, ("human", "auto"), DEFAULT_MIN_SCENARIOS)
        agreements = [agreement(board, tier) for board in boards if board.rows]
        decision = promote(store, experiment, online=online_evidence(log, runs=runs)).decision
    online = next((c for c in decision.checks if c.name == NOT_WORSE_ONLINE), None)
    return {
        "online": online_document(tier, agreements),
        "promotion": {
            "promote": decision.promote,
            "model": decision.model,
            "prompt_version": decision.prompt_version,
            "production": decision.production,
            "online": None if online is None else online.to_dict(),
        },
        "note": None,
        "state_url": shown,
    }


@router.get("/{experiment}")
async def online(experiment: ExperimentName, settings: Settings, store: Store) -> dict[str, Any]:
    """The online tier of the served decisions (`online: null` where nothing was served), the
    judged tiers' agreement with it, and the promotion dry run's online condition."""
    return await run_in_threadpool(_online, experiment, settings, store)
