"""What every part of the SQL store stands on: the few words of dialect each store supplies
(connections, transactions, the lock clauses, the schema's types), and the locked writes of
sums that deciding, rewarding and forgetting all make (the models and the counters).

    SqlBase           dialect hooks, `_run`, `_learn`, `_count`    (`_forget.py` works on it)
    └── SqlLog        the decision log                              (`_sql_log.py`)
        └── SqlStore  config, rewards, expiry, pruning, resets     (`_sql.py`)

The counters behind `/stats` are spread over `COUNTER_SHARDS` rows per policy, so that
concurrent decisions do not queue on one row.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from tipbench.policies import ArmStats
from tipbench.policy_service._schema import COUNTED, UniqueKey, create_or_migrate
from tipbench.policy_service._store import Cursor, StateStore
from tipbench.policy_service._sums import Contributions, Tallies

COUNTER_SHARDS = 16


class SqlBase(StateStore):
    """The dialect a store supplies, and the locked sums every change writes."""

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
