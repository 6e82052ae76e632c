"""The policy service: state stores (SQLite, PostgreSQL), the decision log and the HTTP app.

StateStore                    one narrow interface (`_store.py`)
├── SqliteStore               embedded default, one process
└── PostgresStore             shared by replicas
"""

from tipbench.serving._open import default_state_url, open_store, redact
from tipbench.serving._records import (
    EVENTS,
    CandidateTip,
    DecisionRecord,
    Event,
    LoggedDecision,
    PolicyCounts,
    PolicyDecision,
    ResetScope,
    RewardRecord,
    Roles,
    ScoredCandidate,
)
from tipbench.serving._service import (
    DEFAULT_LIVE,
    PolicyService,
    PolicyStats,
    UnknownCategory,
    check_roles,
)
from tipbench.serving._store import AlreadyRewarded, DecisionNotFound, StateStore

__all__ = [
    "DEFAULT_LIVE",
    "EVENTS",
    "AlreadyRewarded",
    "CandidateTip",
    "DecisionNotFound",
    "DecisionRecord",
    "Event",
    "LoggedDecision",
    "PolicyCounts",
    "PolicyDecision",
    "PolicyService",
    "PolicyStats",
    "ResetScope",
    "RewardRecord",
    "Roles",
    "ScoredCandidate",
    "StateStore",
    "UnknownCategory",
    "check_roles",
    "default_state_url",
    "open_store",
    "redact",
]
