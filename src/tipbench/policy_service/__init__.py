"""The policy service: the service over a state store, the decision log's export, the HTTP app.

    _service.py   decisions, rewards, expiry, stats, resets and the serving config
    _export.py    the decision log as JSON lines, Parquet or DSJson (`_dsjson.py`)
    store/        the state: one narrow interface and its SQL
        StateStore              (`store/_store.py`, its errors drawn there)
        └── SqlStore            locked sums, the decision log, config, rewards, expiry,
            │                   pruning, resets (`store/_sql.py`)
            ├── SqliteStore     its dialect: embedded default, one process
            └── PostgresStore   its dialect: shared by replicas
    api/          the HTTP app: routes by scope, their bodies, tokens, settings, metrics,
                  the background sweep and the server

`create_app`, `PolicyServerSettings` and `serve` (uvicorn with limits) load the web stack on
first use (the 'serve' extra), so that the stores and the log export import without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tipbench._lazy import lazy_exports
from tipbench.policy_service._export import (
    LOG_FORMATS,
    LogFormat,
    decision_row,
    decision_rows,
    export_log,
)
from tipbench.policy_service._service import (
    DEFAULT_LIVE,
    PolicyService,
    PolicyStats,
    Seeding,
    UnknownCategory,
    check_roles,
)
from tipbench.policy_service.api._sweeper import Sweeper
from tipbench.policy_service.store._config import ConfigDocument, ServingConfig
from tipbench.policy_service.store._open import default_state_url, open_store
from tipbench.policy_service.store._records import (
    EVENTS,
    EXPIRED,
    SOURCE_FIELDS,
    UNKNOWN_SOURCE,
    CandidateTip,
    DecisionRecord,
    Event,
    LoggedDecision,
    LoggedEvent,
    PolicyCounts,
    PolicyDecision,
    ResetScope,
    Rewarded,
    RewardRecord,
    Roles,
    ScoredCandidate,
    TipSource,
    source_key,
)
from tipbench.policy_service.store._store import (
    STORE_TIMEOUT_S,
    AlreadyRewarded,
    DecisionConflict,
    DecisionExpired,
    DecisionNotFound,
    DuplicateDecision,
    DuplicateEvent,
    EventIdConflict,
    StateStore,
    StoreUnavailable,
    WrongPolicy,
)

if TYPE_CHECKING:
    from tipbench.policy_service.api._app import create_app
    from tipbench.policy_service.api._server import serve
    from tipbench.policy_service.api._settings import PolicyServerSettings
else:
    __getattr__ = lazy_exports(
        __name__,
        {"PolicyServerSettings": "api._settings", "create_app": "api._app", "serve": "api._server"},
    )

__all__ = [
    "DEFAULT_LIVE",
    "EVENTS",
    "EXPIRED",
    "LOG_FORMATS",
    "SOURCE_FIELDS",
    "STORE_TIMEOUT_S",
    "UNKNOWN_SOURCE",
    "AlreadyRewarded",
    "CandidateTip",
    "ConfigDocument",
    "DecisionConflict",
    "DecisionExpired",
    "DecisionNotFound",
    "DecisionRecord",
    "DuplicateDecision",
    "DuplicateEvent",
    "Event",
    "EventIdConflict",
    "LogFormat",
    "LoggedDecision",
    "LoggedEvent",
    "PolicyCounts",
    "PolicyDecision",
    "PolicyServerSettings",
    "PolicyService",
    "PolicyStats",
    "ResetScope",
    "RewardRecord",
    "Rewarded",
    "Roles",
    "ScoredCandidate",
    "Seeding",
    "ServingConfig",
    "StateStore",
    "StoreUnavailable",
    "Sweeper",
    "TipSource",
    "UnknownCategory",
    "WrongPolicy",
    "check_roles",
    "create_app",
    "decision_row",
    "decision_rows",
    "default_state_url",
    "export_log",
    "open_store",
    "serve",
    "source_key",
]
