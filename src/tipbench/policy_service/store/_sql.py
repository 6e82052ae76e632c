"""The SQL both stores share (`SqliteStore`, `PostgresStore`), in one class.

A store supplies its connections, transactions, timeouts and the few words of dialect (the
abstract methods and the clauses below: SQLite and PostgreSQL subclass it for that and
nothing else); everything else is here, over one cursor per transaction:

- the locked writes of sums that deciding, rewarding and forgetting all make (the models and
  the counters behind `/stats`, spread over `COUNTER_SHARDS` rows per policy so that
  concurrent decisions do not queue on one row);
- the decision log: a batch of decisions written with their shadows' rows and their counts in
  one transaction, read back by decision id, by the client's event id, or whole in keyset
  pages (`(seq, id) > (?, ?)`, on the `(seq, id)` index: an export costs the same per row at
  any size; the columns are `_rows.py`'s);
- the serving config, the models and profiles as the policies read them, rewards (what each
  teaches), expiry, pruning, the counts behind `/stats`, and resets (`_forget.py` gathers what
  leaving decisions taught).
"""

from __future__ import annotations

import json
import random
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np

from tipbench.policies import ArmStats, ProfileStats
from tipbench.policy_service.store._config import ConfigDocument
from tipbench.policy_service.store._forget import Forgetting
from tipbench.policy_service.store._records import (
    EXPIRED,
    UNKNOWN_SOURCE,
    DecisionRecord,
    LoggedDecision,
    PolicyCounts,
    PolicyDecision,
    ResetScope,
    Rewarded,
    RewardRecord,
)
from tipbench.policy_service.store._rows import (
    DECISION_COLUMNS,
    SHADOW_COLUMNS,
    decision_values,
    logged_decision,
    logged_shadow,
    reward_fields,
    settled,
    shadow_values,
)
from tipbench.policy_service.store._schema import COUNTED, TABLES, UniqueKey, create_or_migrate
from tipbench.policy_service.store._store import (
    Cursor,
    DecisionConflict,
    DecisionNotFound,
    DuplicateDecision,
    DuplicateEvent,
    StateStore,
    WrongPolicy,
)
from tipbench.policy_service.store._sums import Contributions, Tallies, shadow_update_weight

COUNTER_SHARDS = 16
EXPORT_PAGE = 1000  # decisions read per transaction when the log is exported
PAGE_WHERE = "(seq, id) > (?, ?)"  # the rows after the last one read: an index range scan
_ID = DECISION_COLUMNS.index("id")


def _insert(table: str, columns: Sequence[str]) -> str:
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


class SqlStore(StateStore):
    """The shared SQL over one cursor per transaction; subclasses supply the dialect."""

    lock_clause = ""  # PostgreSQL: " FOR UPDATE"
    skip_locked_clause = ""  # PostgreSQL: " FOR UPDATE SKIP LOCKED"
    types: ClassVar[dict[str, str]] = {"integer": "INTEGER", "real": "REAL", "blob": "BLOB"}

    @abstractmethod
    def _transaction(self, *, write: bool) -> AbstractContextManager[Cursor]:
        """A cursor inside one transaction, committed on a clean exit, else rolled back."""

    @abstractmethod
    def _table_exists(self, cur: Cursor, table: str) -> bool: ...

    @abstractmethod
    def _duplicate_key(self, exc: Exception) -> UniqueKey | None:
        """Which unique key of the log `exc` violates; None if it is another error."""

    @abstractmethod
    def _restart_sequence(self, cur: Cursor) -> None: ...

    def _lock_config(self, cur: Cursor) -> None:
        """Serialise config changes (SQLite's `BEGIN IMMEDIATE` does already)."""

    def _sql(self, sql: str) -> str:
        return sql  # PostgreSQL rewrites the `?` placeholders

    def _run(self, cur: Cursor, sql: str, params: Sequence[Any] = ()) -> Any:
        return cur.execute(self._sql(sql), params)

    def _create_schema(self, cur: Cursor) -> None:
        mark = self._sql("?")
        create_or_migrate(cur, self._table_exists, mark=mark, **self.types)

    # -- models and counters: sums added, or taken back, under lock ------------------------

    def _add_sums(
        self, cur: Cursor, table: str, keys: tuple[str, ...], sums: Contributions, sign: int
    ) -> None:
        """Add (sign 1) or take back (-1) sums into `table`'s rows, locked in key order."""
        where = " AND ".join(f"{k} = ?" for k in keys)
        for key, delta in sums:
            empty = ArmStats.empty(delta.rx.shape[0]).to_bytes()
            self._run(
                cur,
                f"INSERT INTO {table} ({', '.join(keys)}, xx, rx, n) "
                f"VALUES ({', '.join('?' for _ in keys)}, ?, ?, 0) "
                f"ON CONFLICT ({', '.join(keys)}) DO NOTHING",
                (*key, *empty),
            )
            self._run(cur, f"SELECT xx, rx, n FROM {table} WHERE {where}{self.lock_clause}", key)
            xx, rx, n = cur.fetchone()
            stored = ArmStats.from_bytes(bytes(xx), bytes(rx), int(n))
            updated = delta.applied_to(stored, sign)
            self._run(
                cur,
                f"UPDATE {table} SET xx = ?, rx = ?, n = ? WHERE {where}",
                (*updated.to_bytes(), updated.n, *key),
            )

    def _learn(self, cur: Cursor, sums: Contributions, sign: int = 1) -> None:
        self._add_sums(cur, "arms", ("policy", "category"), sums, sign)

    def _count(self, cur: Cursor, tallies: Tallies, sign: int = 1) -> None:
        """Add (or take back) the tallies: the counters per policy, then per policy and
        source (the same order everywhere)."""
        columns = ", ".join(COUNTED)
        marks = ", ".join("?" for _ in COUNTED)
        shard = random.randrange(COUNTER_SHARDS)
        for table, keys, rows in (
            ("counters", ("policy",), (((p,), v) for p, v in tallies)),
            ("source_counters", ("policy", "source"), tallies.by_source()),
        ):
            updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in COUNTED)
            named = ", ".join(keys)
            for key, values in rows:
                self._run(
                    cur,
                    f"INSERT INTO {table} ({named}, shard, {columns}) "
                    f"VALUES ({', '.join('?' for _ in key)}, ?, {marks}) "
                    f"ON CONFLICT ({named}, shard) DO UPDATE SET {updates}",
                    (*key, shard, *(sign * values[c] for c in COUNTED)),
                )

    # -- the decision log: a batch written with its shadows and counts in one transaction,
    #    read back by id, by event id, or whole in keyset pages -------------------------

    def record_decisions(self, records: Sequence[DecisionRecord]) -> None:
        tallies = Tallies()
        decisions, shadows = [], []
        for record in records:
            decisions.append(decision_values(record))
            tallies.served(record.decision.policy, record.decision.source, "decisions")
            for shadow in record.shadows:
                shadows.append(shadow_values(record.id, shadow))
                tallies.add(shadow.policy, "shadow_decisions")
        try:
            with self._transaction(write=True) as cur:
                cur.executemany(self._sql(_insert("decisions", DECISION_COLUMNS)), decisions)
                if shadows:
                    cur.executemany(self._sql(_insert("shadow_decisions", SHADOW_COLUMNS)), shadows)
                self._count(cur, tallies)
        except Exception as exc:
            key = self._duplicate_key(exc)
            if key is None:
                raise
            raise self._duplicate(key, records) from exc

    def _duplicate(self, key: UniqueKey, records: Sequence[DecisionRecord]) -> DecisionConflict:
        """The error of a batch that violated `key`, naming the record that did."""
        if key == "event_id":
            ids = [r.event_id for r in records if r.event_id is not None]
            taken = next((e for e in ids if self.decision_for_event(e) is not None), None)
            return DuplicateEvent(taken or (ids[0] if ids else "?"))
        logged = next((r.id for r in records if self.decision(r.id) is not None), None)
        return DuplicateDecision(logged or records[0].id)

    def decision(self, decision_id: str) -> LoggedDecision | None:
        with self._transaction(write=False) as cur:
            found = self._logged(cur, "id = ?", (decision_id,))
        return found[0] if found else None

    def decision_for_event(self, event_id: str) -> LoggedDecision | None:
        with self._transaction(write=False) as cur:
            found = self._logged(cur, "event_id = ?", (event_id,))
        return found[0] if found else None

    def _logged(
        self, cur: Cursor, where: str, params: Sequence[Any], limit: int | None = None
    ) -> list[LoggedDecision]:
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        self._run(
            cur,
            f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions WHERE {where} "
            f"ORDER BY seq, id{tail}",
            params,
        )
        rows = cur.fetchall()
        if not rows:
            return []
        marks = ", ".join("?" for _ in rows)
        self._run(
            cur,
            f"SELECT {', '.join(SHADOW_COLUMNS)} FROM shadow_decisions "
            f"WHERE decision_id IN ({marks}) ORDER BY decision_id, policy",
            [row[_ID] for row in rows],
        )
        shadows: dict[str, list[PolicyDecision]] = {}
        for shadow in cur.fetchall():
            decision_id, decision = logged_shadow(shadow)
            shadows.setdefault(decision_id, []).append(decision)
        return [logged_decision(row, shadows.get(row[_ID], [])) for row in rows]

    def decisions(self) -> Iterator[LoggedDecision]:
        after: tuple[int, str] = (-1, "")  # (seq, id) of the last row handed out
        while True:  # keyset pages: the log is never held in memory whole
            with self._transaction(write=False) as cur:
                page = self._logged(cur, PAGE_WHERE, after, EXPORT_PAGE)
            if not page:
                return
            yield from page
            last = page[-1].record
            after = (last.sequence, last.id)

    # -- config ---------------------------------------------------------------------------

    def config(self) -> ConfigDocument:
        with self._transaction(write=False) as cur:
            return self._config(cur)

    def _config(self, cur: Cursor) -> ConfigDocument:
        self._run(cur, "SELECT value FROM settings WHERE key = 'config'")
        row = cur.fetchone()
        return {} if row is None else dict(json.loads(row[0]))

    def update_config(
        self, change: Callable[[ConfigDocument], ConfigDocument]
    ) -> tuple[ConfigDocument, ConfigDocument]:
        with self._transaction(write=True) as cur:
            self._lock_config(cur)
            before = self._config(cur)
            after = change(before)
            if after != before:
                self._run(
                    cur,
                    "INSERT INTO settings (key, value) VALUES ('config', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (json.dumps(after, allow_nan=False),),
                )
        return before, after

    # -- models and profiles --------------------------------------------------------------

    def arms(self, policies: Iterable[str]) -> dict[str, dict[str, ArmStats]]:
        names = list(policies)
        found: dict[str, dict[str, ArmStats]] = {name: {} for name in names}
        if not names:
            return found
        marks = ", ".join("?" for _ in names)
        with self._transaction(write=False) as cur:
            self._run(
                cur,
                f"SELECT policy, category, xx, rx, n FROM arms WHERE policy IN ({marks})",
                names,
            )
            for policy, category, xx, rx, n in cur.fetchall():
                found[policy][category] = ArmStats.from_bytes(bytes(xx), bytes(rx), int(n))
        return found

    def profile(self, user_id: str) -> ProfileStats:
        with self._transaction(write=False) as cur:
            self._run(
                cur,
                "SELECT responses, completed, dismissed, dwell_n, dwell_sum_s, "
                "completed_hour_sin, completed_hour_cos FROM profiles WHERE user_id = ?",
                (user_id,),
            )
            row = cur.fetchone()
        if row is None:
            return ProfileStats()
        return ProfileStats(
            int(row[0]), int(row[1]), int(row[2]), int(row[3]), *map(float, row[4:])
        )

    # -- rewards, expiry, pruning ---------------------------------------------------------

    def record_reward(
        self, decision_id: str, reward: RewardRecord, policy: str | None = None
    ) -> Rewarded:
        with self._transaction(write=True) as cur:
            self._run(
                cur,
                "SELECT policy, user_id, category, features, moment, reward, event, dwell_s, "
                "rewarded_at, propensity, source FROM decisions WHERE id = ?" + self.lock_clause,
                (decision_id,),
            )
            row = cur.fetchone()
            if row is None:
                raise DecisionNotFound(f"no decision {decision_id!r}")
            decided_by, user_id, category, features, moment = row[:5]
            if policy is not None and policy != decided_by:
                raise WrongPolicy(decision_id, decided_by, policy)
            if row[6] is not None:
                stored = RewardRecord(*reward_fields(row[5:9]))
                return Rewarded(decided_by, settled(decision_id, stored, reward), replayed=True)
            self._run(
                cur,
                "UPDATE decisions SET reward = ?, event = ?, dwell_s = ?, rewarded_at = ? "
                "WHERE id = ?",
                (reward.reward, reward.event, reward.dwell_s, reward.rewarded_at, decision_id),
            )
            assert reward.reward is not None
            shown = (decision_id, decided_by, category, features, row[9])
            taught = self._taught(cur, [shown], reward.reward)
            self._learn(cur, taught)
            self._respond(cur, user_id, reward, float(json.loads(moment)["local_hour"]))
            tallies = Tallies()
            source = row[10]
            tallies.served(decided_by, source, "rewards")
            tallies.served(decided_by, source, "reward_sum", reward.reward)
            tallies.served(decided_by, source, reward.event)
            self._count(cur, tallies)
        shadows = sorted({key[0] for key, _ in taught} - {decided_by})
        return Rewarded(decided_by, reward, shadows=tuple(shadows))

    def _taught(
        self, cur: Cursor, decisions: Sequence[Sequence[Any]], reward: float
    ) -> Contributions:
        """What `reward` for each of these (id, policy, category, features, propensity)
        decisions teaches: the deciding policy's model, and the model of every shadow that
        scored the request, for the category of the tip shown, each with its own logged
        features (weighted by `shadow_update_weight` of the live propensity). Marks the
        shadows as taught."""
        sums = Contributions()
        shown: dict[str, tuple[str, float]] = {}
        for decision_id, policy, category, features, propensity in decisions:
            sums.add((policy, category), np.array(json.loads(features)), reward)
            shown[decision_id] = (category, shadow_update_weight(float(propensity)))
        marks = ", ".join("?" for _ in decisions)
        ids = list(shown)
        self._run(
            cur,
            f"SELECT decision_id, policy, features FROM shadow_decisions "
            f"WHERE decision_id IN ({marks})",
            ids,
        )
        for decision_id, policy, features in cur.fetchall():
            category, weight = shown[decision_id]
            sums.add((policy, category), np.array(json.loads(features)), reward, weight)
        self._run(
            cur, f"UPDATE shadow_decisions SET learned = 1 WHERE decision_id IN ({marks})", ids
        )
        return sums

    def _respond(self, cur: Cursor, user_id: str, reward: RewardRecord, local_hour: float) -> None:
        delta = ProfileStats().updated(reward.event, reward.dwell_s, local_hour)
        self._run(
            cur,
            "INSERT INTO profiles (user_id) VALUES (?) ON CONFLICT (user_id) DO NOTHING",
            (user_id,),
        )
        self._run(
            cur,
            "UPDATE profiles SET responses = responses + ?, completed = completed + ?, "
            "dismissed = dismissed + ?, dwell_n = dwell_n + ?, dwell_sum_s = dwell_sum_s + ?, "
            "completed_hour_sin = completed_hour_sin + ?, "
            "completed_hour_cos = completed_hour_cos + ? WHERE user_id = ?",
            (
                delta.responses,
                delta.completed,
                delta.dismissed,
                delta.dwell_n,
                delta.dwell_sum_s,
                delta.completed_hour_sin,
                delta.completed_hour_cos,
                user_id,
            ),
        )

    def expire(self, before: str, default_reward: float | None, now: str, limit: int) -> int:
        with self._transaction(write=True) as cur:
            self._run(
                cur,
                "SELECT id, policy, category, features, propensity, source FROM decisions "
                "WHERE event IS NULL AND "
                f"created_at < ? ORDER BY created_at LIMIT ?{self.skip_locked_clause}",
                (before, limit),
            )
            found = [tuple(row) for row in cur.fetchall()]
            rows = [row[:5] for row in found]
            if not rows:
                return 0
            marks = ", ".join("?" for _ in rows)
            self._run(
                cur,
                "UPDATE decisions SET reward = ?, event = ?, dwell_s = NULL, rewarded_at = ? "
                f"WHERE id IN ({marks})",
                (default_reward, EXPIRED, now, *(row[0] for row in rows)),
            )
            if default_reward is not None:
                self._learn(cur, self._taught(cur, rows, default_reward))
            tallies = Tallies()
            for row in found:
                tallies.served(row[1], row[5], EXPIRED)
            self._count(cur, tallies)
        return len(rows)

    def prune(self, before: str, limit: int) -> int:
        with self._transaction(write=True) as cur:
            forgetting = Forgetting(self, cur)
            pruned = forgetting.gather(
                "event IS NOT NULL AND created_at < ?", (before,), limit=limit, skip_locked=True
            )
            if not pruned:
                return 0
            self._add_sums(
                cur,
                "user_contributions",
                ("user_id", "policy", "category"),
                forgetting.by_user,
                1,
            )
            forgetting.delete()
            self._run(  # the SQLite store numbers on from here even if the log is empty
                cur,
                "INSERT INTO settings (key, value) VALUES ('sequence', ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value "
                "WHERE CAST(settings.value AS BIGINT) < CAST(excluded.value AS BIGINT)",
                (str(forgetting.last_sequence),),
            )
        return pruned

    # -- stats, resets, health ------------------------------------------------------------

    def counts(self, policy: str) -> PolicyCounts:
        with self._transaction(write=False) as cur:
            sums = ", ".join(f"COALESCE(SUM({c}), 0)" for c in COUNTED)
            self._run(cur, f"SELECT {sums} FROM counters WHERE policy = ?", (policy,))
            values = dict(zip(COUNTED, cur.fetchone(), strict=True))
            return _policy_counts(values, self._source_counts(cur, policy))

    def source_counts(self, policy: str | None = None) -> dict[str, PolicyCounts]:
        with self._transaction(write=False) as cur:
            return self._source_counts(cur, policy)

    def _source_counts(self, cur: Cursor, policy: str | None) -> dict[str, PolicyCounts]:
        where, params = ("WHERE policy = ?", (policy,)) if policy is not None else ("", ())
        sums = ", ".join(f"SUM({c})" for c in COUNTED)
        self._run(
            cur,
            f"SELECT source, {sums} FROM source_counters {where} GROUP BY source ORDER BY source",
            params,
        )
        found = {}
        for source, *values in cur.fetchall():
            counts = _policy_counts(dict(zip(COUNTED, values, strict=True)))
            if counts.decisions or counts.rewards or counts.events:
                found[source or UNKNOWN_SOURCE] = counts
        return found

    def reset(self, scope: ResetScope, policy: str | None, user_id: str | None) -> None:
        with self._transaction(write=True) as cur:
            if scope == "all":
                for table in TABLES:
                    self._run(cur, f"DELETE FROM {table}")
                self._run(cur, "DELETE FROM settings WHERE key = 'sequence'")
                self._restart_sequence(cur)
                return
            forgetting = Forgetting(self, cur)
            if scope == "policy":
                forgetting.gather("policy = ?", (policy,))
                forgetting.take_back()
                forgetting.delete()
                for table in (
                    "shadow_decisions",
                    "arms",
                    "counters",
                    "source_counters",
                    "user_contributions",
                ):
                    self._run(cur, f"DELETE FROM {table} WHERE policy = ?", (policy,))
            else:
                forgetting.gather("user_id = ?", (user_id,))
                forgetting.take_back_folded(user_id or "")
                forgetting.take_back()
                forgetting.delete()
                self._run(cur, "DELETE FROM user_contributions WHERE user_id = ?", (user_id,))
                self._run(cur, "DELETE FROM profiles WHERE user_id = ?", (user_id,))

    def _check(self, cur: Cursor) -> None:
        """Takes what a write needs of every table, writing nothing."""
        for table in TABLES:
            self._run(cur, f"SELECT 1 FROM {table} LIMIT 1")


def _policy_counts(
    values: dict[str, Any], sources: dict[str, PolicyCounts] | None = None
) -> PolicyCounts:
    """Counts from the summed `COUNTED` columns."""
    events = {
        event: int(values[event])
        for event in ("completed", "dismissed", "viewed", EXPIRED)
        if int(values[event])
    }
    return PolicyCounts(
        decisions=int(values["decisions"]),
        rewards=int(values["rewards"]),
        reward_sum=float(values["reward_sum"]),
        shadow_decisions=int(values["shadow_decisions"]),
        events=events,
        sources=sources or {},
    )
