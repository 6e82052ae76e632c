"""The online tier, where the bench loop and the policy loop meet: each (model, prompt)'s
tips measured by what users do with them.

    decision log ─▶ online_tier(log, runs=TrackedRuns(store)) ─▶ OnlineTier (per source: DR,
                    interval, ESS, "not enough traffic"; ranked, the leader paired with each)
    Leaderboard, OnlineTier ─▶ agreement() ─▶ Agreement (per criterion: Spearman's ρ, interval)
    decision log ─▶ online_evidence() ─▶ promote.OnlineEvidence (candidate vs production)
    state_evidence(tracking, state_url) ─▶ the same from the policy service's state, or None
    render_online(tier, agreements) ─▶ lines;  online_document(...) ─▶ JSON

A source is where a tip came from (`policy_service.TipSource`: `model|prompt_version`). The
estimand is the value of serving a source's tips (`_sources`); the estimates, checks and
bounded-memory reading are `tipbench.evaluate`'s. The bench's leaderboards come in as
`compare` builds them; promote receives the evidence as data.
"""

from tipbench.online._agreement import (
    DRAWS,
    MIN_SOURCES,
    Agreement,
    CriterionAgreement,
    agreement,
    direction,
)
from tipbench.online._evidence import (
    StateLog,
    online_evidence,
    served_state,
    state_evidence,
    state_log,
)
from tipbench.online._render import online_document, render_online
from tipbench.online._runs import TrackedRuns
from tipbench.online._sources import SourceRun, SourceTargets, key_of
from tipbench.online._tier import (
    ESTIMATOR,
    PAIRED_SOURCES,
    DecisionLog,
    OnlineRow,
    OnlineStatus,
    OnlineTier,
    RunCheck,
    SourceComparison,
    Standing,
    compare_sources,
    online_tier,
)

__all__ = [
    "DRAWS",
    "ESTIMATOR",
    "MIN_SOURCES",
    "PAIRED_SOURCES",
    "Agreement",
    "CriterionAgreement",
    "DecisionLog",
    "OnlineRow",
    "OnlineStatus",
    "OnlineTier",
    "RunCheck",
    "SourceComparison",
    "SourceRun",
    "SourceTargets",
    "Standing",
    "StateLog",
    "TrackedRuns",
    "agreement",
    "compare_sources",
    "direction",
    "key_of",
    "online_document",
    "online_evidence",
    "online_tier",
    "render_online",
    "served_state",
    "state_evidence",
    "state_log",
]
