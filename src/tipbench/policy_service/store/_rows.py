"""A decision log's rows as the stores write and read them: JSON columns in, records out.

The columns of a decision's row and of a shadow's are named once here (`DECISION_COLUMNS`,
`SHADOW_COLUMNS`): the SQL that writes and reads them, and the values written, follow these
lists, so that a column added is added everywhere or refused at once. Shared by both stores
(`_sql.py`); what a retried reward answers (`settled`) is decided here too, from the
stored row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from tipbench.policies import Moment, PolicyConfig
from tipbench.policy_service.store._records import (
    DecisionRecord,
    LoggedDecision,
    LoggedEvent,
    PolicyDecision,
    RewardRecord,
    ScoredCandidate,
    candidate_fields,
    moment_fields,
    scored_candidate,
)
from tipbench.policy_service.store._store import AlreadyRewarded, DecisionExpired

DECISION_COLUMNS = (
    "id",
    "seq",
    "created_at",
    "user_id",
    "policy",
    "route",
    "moment",
    "feature_version",
    "features",
    "candidates",
    "tip_id",
    "category",
    "propensity",
    "reward",
    "event",
    "dwell_s",
    "rewarded_at",
    "event_id",
    "settings",
    "source",
)
"""The `decisions` columns of the log, in the order its rows are written and read."""
SHADOW_COLUMNS = (
    "decision_id",
    "policy",
    "feature_version",
    "features",
    "candidates",
    "tip_id",
    "propensity",
    "settings",
)
"""The `shadow_decisions` columns of the log (`learned` is the store's own)."""


def _in_order(values: Mapping[str, Any], columns: Sequence[str]) -> tuple[Any, ...]:
    """`values` in the order of `columns`, which must be exactly their names."""
    if values.keys() != set(columns):
        raise ValueError(f"not the table's columns: {sorted(values.keys() ^ set(columns))}")
    return tuple(values[column] for column in columns)


def decision_values(record: DecisionRecord) -> tuple[Any, ...]:
    """A new decision's row (no reward yet), in the order of `DECISION_COLUMNS`."""
    d = record.decision
    return _in_order(
        {
            "id": record.id,
            "seq": record.sequence,
            "created_at": record.created_at,
            "user_id": record.user_id,
            "route": record.route,
            "moment": moment_json(record.moment),
            "event_id": record.event_id,
            **_decision_fields(d),
            "category": d.category,
            "source": d.source,
            **dict.fromkeys(("reward", "event", "dwell_s", "rewarded_at")),
        },
        DECISION_COLUMNS,
    )


def shadow_values(decision_id: str, shadow: PolicyDecision) -> tuple[Any, ...]:
    """A shadow's row of a decision, in the order of `SHADOW_COLUMNS`."""
    return _in_order({"decision_id": decision_id, **_decision_fields(shadow)}, SHADOW_COLUMNS)


def _decision_fields(d: PolicyDecision) -> dict[str, Any]:
    """The columns a decision and a shadow's would-be decision share."""
    return {
        "policy": d.policy,
        "feature_version": d.feature_version,
        "features": json.dumps(d.features),
        "candidates": candidates_json(d.candidates),
        "tip_id": d.tip_id,
        "propensity": d.propensity,
        "settings": settings_json(d),
    }


def settled(decision_id: str, stored: RewardRecord, retry: RewardRecord) -> RewardRecord:
    """The answer to a reward for a settled decision: the stored reward if it is the same."""
    if stored.expired:
        raise DecisionExpired(
            f"decision {decision_id!r} expired at {stored.rewarded_at}: no reward came within "
            "the reward window"
        )
    if (stored.reward, stored.event, stored.dwell_s) != (retry.reward, retry.event, retry.dwell_s):
        raise AlreadyRewarded(
            f"decision {decision_id!r} was rewarded already, with reward {stored.reward} "
            f"({stored.event})"
        )
    return stored


def reward_fields(row: Sequence[Any]) -> tuple[float | None, LoggedEvent, float | None, str]:
    reward, event, dwell_s, rewarded_at = row
    return (
        None if reward is None else float(reward),
        event,
        None if dwell_s is None else float(dwell_s),
        rewarded_at,
    )


def logged_decision(row: Sequence[Any], shadows: Sequence[PolicyDecision]) -> LoggedDecision:
    """A decision from its row (the `DECISION_COLUMNS`) and its shadows' decisions."""
    column = dict(zip(DECISION_COLUMNS, row, strict=True))
    record = DecisionRecord(
        id=column["id"],
        sequence=int(column["seq"]),
        created_at=column["created_at"],
        user_id=column["user_id"],
        route=column["route"],
        moment=Moment(**json.loads(column["moment"])),
        decision=_policy_decision(column),
        shadows=tuple(shadows),
        event_id=column["event_id"],
    )
    joined = None
    if column["event"] is not None:
        reward = (column["reward"], column["event"], column["dwell_s"], column["rewarded_at"])
        joined = RewardRecord(*reward_fields(reward))
    return LoggedDecision(record, joined)


def logged_shadow(row: Sequence[Any]) -> tuple[str, PolicyDecision]:
    """The decision id and a shadow's would-be decision, from its row (`SHADOW_COLUMNS`)."""
    column = dict(zip(SHADOW_COLUMNS, row, strict=True))
    return column["decision_id"], _policy_decision(column)


def moment_json(moment: Moment) -> str:
    return json.dumps(moment_fields(moment))


def candidates_json(candidates: Sequence[ScoredCandidate]) -> str:
    """The candidates as stored: a `source` only where a tip has one."""
    stored = []
    for candidate in candidates:
        fields = candidate_fields(candidate)
        if fields["source"] is None:
            del fields["source"]
        stored.append(fields)
    return json.dumps(stored)


def settings_json(decision: PolicyDecision) -> str | None:
    return None if decision.settings is None else decision.settings.model_dump_json()


def _policy_decision(column: Mapping[str, Any]) -> PolicyDecision:
    """The columns a decision and a shadow's share (`_decision_fields`), read back."""
    settings = column["settings"]
    return PolicyDecision(
        policy=column["policy"],
        feature_version=column["feature_version"],
        features=tuple(json.loads(column["features"])),
        candidates=tuple(scored_candidate(c) for c in json.loads(column["candidates"])),
        tip_id=column["tip_id"],
        propensity=float(column["propensity"]),
        settings=None if settings is None else _settings(settings),
    )


@lru_cache(maxsize=256)
def _settings(text: str) -> PolicyConfig:
    """Settings from their JSON (a log holds few distinct ones: parsed once each)."""
    return PolicyConfig.model_validate_json(text)
