"""The SQL both stores share (`SqliteStore`, `PostgresStore`): they supply connections,
transactions, timeouts and the few words of dialect (`_sql_base.py`); the decision log is
`_sql_log.py`'s; the rest is here: the serving config, the models and profiles as the
policies read them, rewards (what each teaches), expiry, pruning, the counts behind `/stats`,
and resets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tipbench.policies import ArmStats, ProfileStats
from tipbench.policy_service._config import ConfigDocument
from tipbench.policy_service._forget import Forgetting
from tipbench.policy_service._records import (
    EXPIRED,
    UNKNOWN_SOURCE,
    PolicyCounts,
    ResetScope,
    Rewarded,
    RewardRecord,
)
from tipbench.policy_service._rows import reward_fields, settled
from tipbench.policy_service._schema import COUNTED, TABLES
from tipbench.policy_service._sql_log import SqlLog
from tipbench.policy_service._store import Cursor, DecisionNotFound, WrongPolicy
from tipbench.policy_service._sums import Contributions, Tallies, shadow_update_weight


class SqlStore(SqlLog):
    """The shared SQL; subclasses supply connections, transactions and dialect."""

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
                delta.responses, delta.completed, delta.dismissed, delta.dwell_n,
                delta.dwell_sum_s, delta.completed_hour_sin, delta.completed_hour_cos, user_id,
            ),
        )  # fmt: skip

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
                cur, "user_contributions", ("user_id", "policy", "category"),
                forgetting.by_user, 1,
            )  # fmt: skip
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
                    "shadow_decisions", "arms", "counters", "source_counters",
                    "user_contributions",
                ):  # fmt: skip
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
