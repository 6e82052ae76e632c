"""The shared store: PostgreSQL, for several server replicas behind any load balancer.

Changes lock their rows with `SELECT ... FOR UPDATE` in one order everywhere (see
`_store.py`), expiry and pruning skip rows another replica holds (`SKIP LOCKED`), and decision
numbers come from a sequence all replicas share. Every connection has a statement timeout and
a lock timeout (the store's timeout, 2 s by default), connecting and waiting for a pooled
connection are bounded the same way, and any of them running out, or the server going away,
raises `StoreUnavailable`; a broken connection is dropped, so the store recovers by itself
once the database answers again. Needs psycopg 3 (the `policy` extra).
"""

from __future__ import annotations

import math
import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tipbench._errors import ConfigError
from tipbench._redact import redact_text
from tipbench.policy_service.store._schema import TABLES, UNIQUE_KEYS, UniqueKey
from tipbench.policy_service.store._sql import SqlStore
from tipbench.policy_service.store._store import STORE_TIMEOUT_S, Cursor, StoreUnavailable

POOL_SIZE = 8
_SCHEMA_LOCK = 0x7469_7062  # advisory lock ids: replicas starting together create tables once,
_CONFIG_LOCK = 0x7469_7063  # and config changes apply one after the other


class PostgresStore(SqlStore):
    """State in a PostgreSQL database given by a `postgresql://` URL."""

    lock_clause = " FOR UPDATE"
    skip_locked_clause = " FOR UPDATE SKIP LOCKED"
    types: ClassVar[dict[str, str]] = {
        "integer": "BIGINT",
        "real": "DOUBLE PRECISION",
        "blob": "BYTEA",
    }

    def __init__(
        self,
        url: str,
        pool_size: int = POOL_SIZE,
        *,
        timeout_s: float = STORE_TIMEOUT_S,
        create: bool = True,
    ) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "a postgresql:// state store needs psycopg: pip install 'tipbench[policy]'"
            ) from None
        self._psycopg = psycopg
        self._url = url
        self.timeout_s = timeout_s
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._slots = queue.Queue[None]()
        for _ in range(pool_size):
            self._slots.put(None)
        with self._transaction(write=True) as cur:
            self.empty: bool = not self._table_exists(cur, "decisions") and not create
            if self.empty:  # no state here, and none is made
                return
            cur.execute("SET LOCAL statement_timeout = 0")  # a migration may take a while
            cur.execute("SET LOCAL lock_timeout = 0")
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            self._create_schema(cur)
            cur.execute("CREATE SEQUENCE IF NOT EXISTS decision_seq")

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _message(self, exc: Exception) -> str:
        """The driver's first line, without the URL's password."""
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        password = urlsplit(self._url).password
        if password:
            message = message.replace(password, "***")
        return redact_text(message)

    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        return StoreUnavailable(
            f"the PostgreSQL state store did not answer within {self.timeout_s:g} s: "
            + self._message(exc)
        )

    def _connect(self) -> Any:
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(
                self._url, autocommit=True, connect_timeout=max(2, math.ceil(self.timeout_s))
            )
            milliseconds = str(int(self.timeout_s * 1000))
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false), "
                "set_config('lock_timeout', %s, false)",
                (milliseconds, milliseconds),
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to the PostgreSQL state store: {self._message(exc)}"
            ) from None
        return conn

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Cursor]:
        try:
            self._slots.get(timeout=self.timeout_s)  # at most POOL_SIZE connections in use
        except queue.Empty:
            raise StoreUnavailable(
                f"the PostgreSQL state store did not answer within {self.timeout_s:g} s: "
                "every connection is busy"
            ) from None
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            except self._psycopg.OperationalError as exc:  # timeouts, a lost server
                raise self._unavailable(exc) from None
            finally:
                if conn.closed or conn.broken:
                    conn.close()
                    self.close()  # the idle ones went with the same server: reconnect afresh
                else:
                    self._idle.put(conn)
        finally:
            self._slots.put(None)

    def _table_exists(self, cur: Cursor, table: str) -> bool:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        return bool(cur.fetchone()[0])

    def _duplicate_key(self, exc: Exception) -> UniqueKey | None:
        if not isinstance(exc, self._psycopg.errors.UniqueViolation):
            return None
        return UNIQUE_KEYS.get(exc.diag.constraint_name or "")

    def _lock_config(self, cur: Cursor) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_CONFIG_LOCK,))

    def next_sequence(self) -> int:
        with self._transaction(write=True) as cur:
            cur.execute("SELECT nextval('decision_seq')")
            (value,) = cur.fetchone()
        return int(value)

    def _restart_sequence(self, cur: Cursor) -> None:
        cur.execute("ALTER SEQUENCE decision_seq RESTART")

    def check(self, timeout_s: float) -> None:
        milliseconds = max(1, round(timeout_s * 1000))
        with self._transaction(write=True) as cur:
            cur.execute(f"SET LOCAL statement_timeout = {milliseconds}")
            cur.execute(f"SET LOCAL lock_timeout = {milliseconds}")
            # the lock every write takes (released at once): refused while a table is locked
            cur.execute(f"LOCK TABLE {', '.join(TABLES)} IN ROW EXCLUSIVE MODE")

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
