"""Decisions leaving the log (an erased user, a reset policy, pruning), and what they taught.

Inside one transaction of the store, `Forgetting` locks the decisions, gathers what each
taught (the deciding policy's model and every taught shadow's, per category: `taught`; the
same per user: `by_user`) and what the counters counted of them (`tallies`); then the caller
takes it back from the models and counters (`take_back`: erasure, reset), or folds it into
the per-user sums (pruning), and deletes the rows. It works on the store that uses it
(`SqlStore`, as `SqlDialect`: its statements, lock clauses and locked sums).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from tipbench.policies import ArmStats
from tipbench.policy_service.store._records import EVENTS, EXPIRED
from tipbench.policy_service.store._store import Cursor
from tipbench.policy_service.store._sums import Contributions, Tallies, shadow_update_weight

PAGE = 1000


class SqlDialect(Protocol):
    """What forgetting needs of the SQL store (`SqlStore`): its statements, lock clauses and
    locked sums."""

    lock_clause: str
    skip_locked_clause: str

    def _run(self, cur: Cursor, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _learn(self, cur: Cursor, sums: Contributions, sign: int = 1) -> None: ...

    def _count(self, cur: Cursor, tallies: Tallies, sign: int = 1) -> None: ...


class Forgetting:
    """Decisions about to be deleted, gathered under lock in one transaction."""

    def __init__(self, store: SqlDialect, cur: Cursor) -> None:
        self._store = store
        self._cur = cur
        self.taught = Contributions()  # (policy, category) → sums
        self.by_user = Contributions()  # (user, policy, category) → sums
        self.tallies = Tallies()
        self.ids: list[str] = []
        self.last_sequence = 0

    def gather(
        self,
        where: str,
        params: Sequence[Any],
        *,
        limit: int | None = None,
        skip_locked: bool = False,
    ) -> int:
        """Lock and gather the decisions matching `where`: all of them, in pages by id, or
        (with `limit`) the oldest ones, skipping rows another transaction holds. Returns how
        many were gathered."""
        columns = "id, seq, user_id, policy, category, features, reward, event, propensity, source"
        store = self._store
        if limit is not None:
            lock = store.skip_locked_clause if skip_locked else store.lock_clause
            store._run(
                self._cur,
                f"SELECT {columns} FROM decisions WHERE {where} "
                f"ORDER BY created_at LIMIT {int(limit)}{lock}",
                params,
            )
            self._add(self._cur.fetchall())
            return len(self.ids)
        after = ""
        while True:
            store._run(
                self._cur,
                f"SELECT {columns} FROM decisions WHERE ({where}) AND id > ? "
                f"ORDER BY id LIMIT {PAGE}{store.lock_clause}",
                (*params, after),
            )
            rows = self._cur.fetchall()
            if not rows:
                return len(self.ids)
            self._add(rows)
            after = rows[-1][0]

    def _add(self, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        taught: dict[str, tuple[str, str, float, float]] = {}  # id → user, category, r, weight
        for decision_id, seq, user, policy, category, features, reward, event, p, source in rows:
            self.ids.append(decision_id)
            self.last_sequence = max(self.last_sequence, int(seq))
            self.tallies.served(policy, source, "decisions")
            if event in EVENTS:
                self.tallies.served(policy, source, "rewards")
                self.tallies.served(policy, source, "reward_sum", float(reward))
                self.tallies.served(policy, source, event)
            elif event == EXPIRED:
                self.tallies.served(policy, source, EXPIRED)
            if reward is not None:
                self._taught(user, policy, category, features, float(reward))
                weight = shadow_update_weight(float(p))
                taught[decision_id] = (user, category, float(reward), weight)
        marks = ", ".join("?" for _ in rows)
        self._store._run(
            self._cur,
            "SELECT decision_id, policy, features, learned FROM shadow_decisions "
            f"WHERE decision_id IN ({marks})",
            [row[0] for row in rows],
        )
        for decision_id, policy, features, learned in self._cur.fetchall():
            self.tallies.add(policy, "shadow_decisions")
            if learned and decision_id in taught:
                user, category, reward, weight = taught[decision_id]
                self._taught(user, policy, category, features, reward, weight)

    def _taught(
        self, user: str, policy: str, category: str, features: str, r: float, w: float = 1.0
    ) -> None:
        x = np.array(json.loads(features), dtype=np.float64)
        self.taught.add((policy, category), x, r, w)
        self.by_user.add((user, policy, category), x, r, w)

    def take_back_folded(self, user_id: str) -> None:
        """Add the user's sums of pruned decisions to what is taken back (call before
        `take_back`)."""
        self._store._run(
            self._cur,
            "SELECT policy, category, xx, rx, n FROM user_contributions WHERE user_id = ?"
            + self._store.lock_clause,
            (user_id,),
        )
        for policy, category, xx, rx, n in self._cur.fetchall():
            self.taught.add_sums((policy, category), ArmStats.from_bytes(bytes(xx), bytes(rx), n))

    def take_back(self) -> None:
        """Subtract what the gathered decisions taught from the models, and their counts."""
        self._store._learn(self._cur, self.taught, -1)
        self._store._count(self._cur, self.tallies, -1)

    def delete(self) -> None:
        for start in range(0, len(self.ids), PAGE):
            chunk = self.ids[start : start + PAGE]
            marks = ", ".join("?" for _ in chunk)
            for sql in (
                f"DELETE FROM shadow_decisions WHERE decision_id IN ({marks})",
                f"DELETE FROM decisions WHERE id IN ({marks})",
            ):
                self._store._run(self._cur, sql, chunk)
