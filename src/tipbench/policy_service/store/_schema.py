"""The state's tables, and the migration of a state written by an earlier version.

Schema version 2 (stored as `settings['schema_version']`) added the client's event id and the
settings in force to every decision, `learned` to the shadows' rows (which shadow models a
reward taught), the `counters` behind `/stats`, the per-user sums of pruned decisions, and the
serving config as one document (`settings['config']`, formerly the roles alone). Version 3
added where tips came from: each decision's `source` (the served tip's, `TipSource.key`; null:
unknown) and the `source_counters` behind `/stats`' per-source counts, which start from the
policies' counters (every earlier decision is of unknown source). An older state (version 1
has no version row) is migrated in place when a store opens it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from tipbench.policy_service.store._store import Cursor

SCHEMA_VERSION = 3

COUNTED = (
    "decisions",
    "rewards",
    "reward_sum",
    "shadow_decisions",
    "completed",
    "dismissed",
    "viewed",
    "expired",
)
"""The `counters` columns: per policy, summed over shards (and per policy and source in
`source_counters`, where `shadow_decisions` stays 0)."""
NO_SOURCE = ""  # `source_counters.source` of the decisions whose tip has no known source

UniqueKey = Literal["decision", "event_id"]
"""The log's unique keys: a decision's id (its row and its shadows' rows), a client's event id."""
UNIQUE_KEYS: dict[str, UniqueKey] = {
    # SQLite names the columns of the key, PostgreSQL its constraint or index
    "decisions.id": "decision",
    "shadow_decisions.decision_id, shadow_decisions.policy": "decision",
    "decisions.event_id": "event_id",
    "decisions_pkey": "decision",
    "shadow_decisions_pkey": "decision",
    "decisions_event_id": "event_id",
}

TABLES = (
    "decisions",
    "shadow_decisions",
    "arms",
    "profiles",
    "counters",
    "user_contributions",
    "source_counters",
)
"""The tables of the log, the models and the counters (`settings` holds the config)."""

_TABLES = """
CREATE TABLE IF NOT EXISTS decisions (
    id TEXT PRIMARY KEY, seq {int} NOT NULL, created_at TEXT NOT NULL,
    user_id TEXT NOT NULL, policy TEXT NOT NULL, route TEXT NOT NULL, moment TEXT NOT NULL,
    feature_version TEXT NOT NULL, features TEXT NOT NULL, candidates TEXT NOT NULL,
    tip_id TEXT NOT NULL, category TEXT NOT NULL, propensity {real} NOT NULL,
    reward {real}, event TEXT, dwell_s {real}, rewarded_at TEXT,
    event_id TEXT, settings TEXT, source TEXT);
CREATE TABLE IF NOT EXISTS shadow_decisions (
    decision_id TEXT NOT NULL, policy TEXT NOT NULL, feature_version TEXT NOT NULL,
    features TEXT NOT NULL, candidates TEXT NOT NULL, tip_id TEXT NOT NULL,
    propensity {real} NOT NULL, settings TEXT, learned {int} NOT NULL DEFAULT 0,
    PRIMARY KEY (decision_id, policy));
CREATE TABLE IF NOT EXISTS arms (
    policy TEXT NOT NULL, category TEXT NOT NULL, xx {blob} NOT NULL, rx {blob} NOT NULL,
    n {int} NOT NULL, PRIMARY KEY (policy, category));
CREATE TABLE IF NOT EXISTS profiles (
    user_id TEXT PRIMARY KEY, responses {int} NOT NULL DEFAULT 0,
    completed {int} NOT NULL DEFAULT 0, dismissed {int} NOT NULL DEFAULT 0,
    dwell_n {int} NOT NULL DEFAULT 0, dwell_sum_s {real} NOT NULL DEFAULT 0,
    completed_hour_sin {real} NOT NULL DEFAULT 0, completed_hour_cos {real} NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (
    policy TEXT NOT NULL, shard {int} NOT NULL,
    decisions {int} NOT NULL DEFAULT 0, rewards {int} NOT NULL DEFAULT 0,
    reward_sum {real} NOT NULL DEFAULT 0, shadow_decisions {int} NOT NULL DEFAULT 0,
    completed {int} NOT NULL DEFAULT 0, dismissed {int} NOT NULL DEFAULT 0,
    viewed {int} NOT NULL DEFAULT 0, expired {int} NOT NULL DEFAULT 0,
    PRIMARY KEY (policy, shard));
CREATE TABLE IF NOT EXISTS source_counters (
    policy TEXT NOT NULL, source TEXT NOT NULL, shard {int} NOT NULL,
    decisions {int} NOT NULL DEFAULT 0, rewards {int} NOT NULL DEFAULT 0,
    reward_sum {real} NOT NULL DEFAULT 0, shadow_decisions {int} NOT NULL DEFAULT 0,
    completed {int} NOT NULL DEFAULT 0, dismissed {int} NOT NULL DEFAULT 0,
    viewed {int} NOT NULL DEFAULT 0, expired {int} NOT NULL DEFAULT 0,
    PRIMARY KEY (policy, source, shard));
CREATE TABLE IF NOT EXISTS user_contributions (
    user_id TEXT NOT NULL, policy TEXT NOT NULL, category TEXT NOT NULL,
    xx {blob} NOT NULL, rx {blob} NOT NULL, n {int} NOT NULL,
    PRIMARY KEY (user_id, policy, category))
"""

_INDEXES = """
CREATE INDEX IF NOT EXISTS decisions_policy ON decisions (policy);
CREATE INDEX IF NOT EXISTS decisions_user ON decisions (user_id);
CREATE INDEX IF NOT EXISTS decisions_seq ON decisions (seq, id);
CREATE INDEX IF NOT EXISTS decisions_created ON decisions (created_at);
CREATE INDEX IF NOT EXISTS decisions_pending ON decisions (created_at) WHERE event IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS decisions_event_id ON decisions (event_id);
CREATE INDEX IF NOT EXISTS shadow_decisions_policy ON shadow_decisions (policy)
"""

_FROM_VERSION_1 = [
    "ALTER TABLE decisions ADD COLUMN event_id TEXT",
    "ALTER TABLE decisions ADD COLUMN settings TEXT",
    "ALTER TABLE shadow_decisions ADD COLUMN settings TEXT",
    "ALTER TABLE shadow_decisions ADD COLUMN learned {int} NOT NULL DEFAULT 0",
]

_FROM_VERSION_2 = ["ALTER TABLE decisions ADD COLUMN source TEXT"]

_BACKFILL_SOURCE_COUNTERS = (
    f"INSERT INTO source_counters (policy, source, shard, {', '.join(COUNTED)}) "
    f"SELECT policy, '{NO_SOURCE}', shard, {', '.join(COUNTED[:3])}, 0, "
    f"{', '.join(COUNTED[4:])} FROM counters"
)

_BACKFILL_COUNTERS = [
    "INSERT INTO counters (policy, shard, decisions, rewards, reward_sum, completed, dismissed, "
    "viewed) SELECT policy, 0, COUNT(*), COUNT(reward), COALESCE(SUM(reward), 0), "
    "SUM(CASE WHEN event = 'completed' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN event = 'dismissed' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN event = 'viewed' THEN 1 ELSE 0 END) FROM decisions GROUP BY policy",
    "INSERT INTO counters (policy, shard, shadow_decisions) SELECT policy, 0, COUNT(*) "
    "FROM shadow_decisions GROUP BY policy "
    "ON CONFLICT (policy, shard) DO UPDATE SET shadow_decisions = excluded.shadow_decisions",
]


def statements(text: str, *, integer: str, real: str, blob: str) -> list[str]:
    formatted = text.format(int=integer, real=real, blob=blob)
    return [s.strip() for s in formatted.split(";") if s.strip()]


def create_or_migrate(
    cur: Cursor,
    table_exists: Callable[[Cursor, str], bool],
    *,
    mark: str,
    integer: str,
    real: str,
    blob: str,
) -> None:
    """Create the tables of a new state, or bring an older one to `SCHEMA_VERSION` (`mark`:
    the driver's placeholder)."""
    existed = table_exists(cur, "decisions")
    version = 0
    if table_exists(cur, "settings"):
        cur.execute("SELECT value FROM settings WHERE key = 'schema_version'")
        row = cur.fetchone()
        version = int(row[0]) if row else (1 if existed else 0)
    if version == 1:
        for statement in _FROM_VERSION_1:
            cur.execute(statement.format(int=integer))
    if 1 <= version < 3:
        for statement in _FROM_VERSION_2:
            cur.execute(statement)
    for statement in statements(_TABLES + ";" + _INDEXES, integer=integer, real=real, blob=blob):
        cur.execute(statement)
    if version == 1:
        for statement in _BACKFILL_COUNTERS:
            cur.execute(statement)
        cur.execute("SELECT value FROM settings WHERE key = 'roles'")
        roles = cur.fetchone()
        if roles is not None:
            cur.execute(
                f"INSERT INTO settings (key, value) VALUES ('config', {mark})",
                (json.dumps(json.loads(roles[0])),),
            )
            cur.execute("DELETE FROM settings WHERE key = 'roles'")
    if 1 <= version < 3:
        cur.execute(_BACKFILL_SOURCE_COUNTERS)
    if version < SCHEMA_VERSION:
        cur.execute(
            f"INSERT INTO settings (key, value) VALUES ('schema_version', {mark}) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
