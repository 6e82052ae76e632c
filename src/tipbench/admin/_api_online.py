"""`/api/bench/online/{experiment}`: the online tier beside the bench panel's leaderboard.

What users did with each (model, prompt)'s tips, from the policy service's decision log (the
state of `TIPBENCH_POLICY_STATE_URL`, as the Policies page reads it), the agreement of the
experiment's judged tiers with it, and promote's dry run with its online condition: the
figures of `tipbench compare --tier online` and `tipbench promote --online-state-url`. The
log is read again only when it has grown (the tier and the comparisons promote asked for are
kept per state and log size, as the Policies page keeps its evaluation).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from tipbench._redact import redact_uri
from tipbench.admin._deps import ExperimentName, Settings, Store
from tipbench.admin._settings import ServerSettings
from tipbench.compare import DEFAULT_MIN_SCENARIOS, leaderboards_for
from tipbench.online import (
    OnlineTier,
    TrackedRuns,
    agreement,
    online_document,
    online_evidence,
    online_tier,
    served_state,
    state_log,
)
from tipbench.policy_gate import log_size
from tipbench.policy_service import StateStore, default_state_url
from tipbench.promote import NOT_WORSE_ONLINE, OnlineComparison, OnlineEvidence, promote
from tipbench.tracking import TrackingStore

router = APIRouter(prefix="/api/bench/online", tags=["bench"])
NOTHING_SERVED = (
    "Nothing served yet: the online tier reads the decision log of tipbench policy serve, "
    "whose candidates say where each tip came from."
)


_reading = threading.Lock()


@dataclass
class _Read:
    """What one state's log gave at one size: its tier, and the comparisons asked of it."""

    key: tuple[Any, ...]
    tier: OnlineTier
    comparisons: dict[tuple[str, str], OnlineComparison] = field(default_factory=dict)


def _read(request: Request, url: str, state: StateStore, store: TrackingStore) -> _Read:
    """The state's tier, read again only when its log has grown."""
    key = (url, *log_size(state))
    with _reading:
        found: _Read | None = getattr(request.app.state, "online_read", None)
        if found is None or found.key != key:
            found = _Read(key, online_tier(state_log(state), runs=TrackedRuns(store)))
            request.app.state.online_read = found
        return found


def _evidence(found: _Read, state: StateStore, store: TrackingStore) -> OnlineEvidence:
    answer = online_evidence(state_log(state), runs=TrackedRuns(store))

    def kept(candidate: str, production: str) -> OnlineComparison:
        pair = (candidate, production)
        if pair not in found.comparisons:
            found.comparisons[pair] = answer(candidate, production)
        return found.comparisons[pair]

    return kept


def _online(
    request: Request, experiment: str, settings: ServerSettings, store: TrackingStore
) -> dict[str, Any]:
    url = settings.policy_state_url or default_state_url()
    shown = redact_uri(url)
    with served_state(settings.policy_state_url) as state:
        if state is None:
            return {"online": None, "promotion": None, "note": NOTHING_SERVED, "state_url": shown}
        found = _read(request, url, state, store)
        tier = found.tier
        boards = leaderboards_for(store, experiment, ("human", "auto"), DEFAULT_MIN_SCENARIOS)
        agreements = [agreement(board, tier) for board in boards if board.rows]
        evidence = _evidence(found, state, store)
        decision = promote(store, experiment, online=evidence).decision
    online = next((c for c in decision.conditions if c.name == NOT_WORSE_ONLINE), None)
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
async def online(
    request: Request, experiment: ExperimentName, settings: Settings, store: Store
) -> dict[str, Any]:
    """The online tier of the served decisions (`online: null` where nothing was served), the
    judged tiers' agreement with it, and the promotion dry run's online condition."""
    return await run_in_threadpool(_online, request, experiment, settings, store)
