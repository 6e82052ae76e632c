"""The embedded default store: one SQLite file in WAL mode, for one server process.

Writes take the database's write lock up front (`BEGIN IMMEDIATE`), so a reward's reads and
writes happen under one lock; `synchronous=FULL` makes every commit durable before the HTTP
answer goes out. Each thread keeps its own connection. A lock wait is bounded by SQLite's
busy timeout and a statement by a progress handler, both the store's timeout: past it the
store raises `StoreUnavailable`.

The file is created readable by its owner only (0600). A serving process opens it
`exclusive`ly: while it runs it holds an advisory lock (flock) on the database file itself,
so that a second server on the same file is refused whatever name it is given (a symlink, a
hard link, a relative path): its decision numbers live in memory and would collide (replicas
share a PostgreSQL store instead). flock locks are independent of the POSIX locks SQLite takes
on the same file (Linux, macOS and the BSDs keep them apart on local file systems). Other
commands (export, prune) may open the file beside the server.
"""

from __future__ import annotations

import fcntl
import itertools
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench.policy_service.store._schema import UNIQUE_KEYS, UniqueKey
from tipbench.policy_service.store._sql import SqlStore
from tipbench.policy_service.store._store import STORE_TIMEOUT_S, Cursor, StoreUnavailable

PROGRESS_STEPS = 10_000  # SQLite VM steps between two looks at the statement deadline


def _flock_holder(file: os.stat_result) -> int | None:
    """The pid holding a flock on `file`, from Linux's /proc/locks (None elsewhere)."""
    device = f"{os.major(file.st_dev):02x}:{os.minor(file.st_dev):02x}:{file.st_ino}"
    try:
        lines = Path("/proc/locks").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:  # "1: FLOCK  ADVISORY  WRITE 17305 fe:00:2146385 0 EOF"
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == device:
            return int(fields[4]) if fields[4].isdigit() else None
    return None


class SqliteStore(SqlStore):
    """State in a SQLite file (created with its folder if missing)."""

    def __init__(
        self, path: Path, *, timeout_s: float = STORE_TIMEOUT_S, exclusive: bool = False
    ) -> None:
        self.path = path
        self.timeout_s = timeout_s
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot create the state file: {exc.strerror}") from None
        self._owner: int | None = self._lock_owner() if exclusive else None
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._transaction(write=True, bounded=False) as cur:
            self._create_schema(cur)
            cur.execute(
                "SELECT MAX(COALESCE((SELECT MAX(seq) FROM decisions), 0), COALESCE((SELECT "
                "CAST(value AS INTEGER) FROM settings WHERE key = 'sequence'), 0))"
            )
            (last,) = cur.fetchone()
        # One process serves a SQLite store, so the sequence can live in memory (replicas that
        # share state use PostgreSQL, whose sequence is shared).
        self._sequence = itertools.count(int(last) + 1)

    def _lock_owner(self) -> int:
        """Hold an exclusive flock on the database file for the life of this store, or refuse:
        one server per file, by the file itself (its inode), not by the name it was given.

        Closing a descriptor of the file drops the POSIX locks SQLite holds on it in this
        process, so this one is closed only once the store's connections are (`close`); here
        no connection is open yet.
        """
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _flock_holder(os.fstat(fd))
            os.close(fd)
            raise ConfigError(
                f"{self.path} is served by another process already"
                f"{f' (pid {holder})' if holder else ''}: a SQLite state serves one process; "
                "run replicas on --state-url postgresql://..."
            ) from None
        return fd

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=0
                )
                # the busy timeout first: switching to WAL waits for a lock, which another
                # connection opening at the same moment may hold
                conn.execute(f"PRAGMA busy_timeout={round(self.timeout_s * 1000)}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                raise ConfigError(f"{self.path}: cannot open the state store: {exc}") from None
            self._local.conn = conn
            self._local.deadline = math.inf
            conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)
            with self._lock:
                self._connections.append(conn)
        return conn

    def _past_deadline(self) -> bool:
        deadline: float = self._local.deadline
        return time.monotonic() > deadline  # True interrupts the statement

    @contextmanager
    def _transaction(
        self, *, write: bool, bounded: bool = True, timeout_s: float | None = None
    ) -> Iterator[Cursor]:
        conn = self._connection()
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        self._local.deadline = time.monotonic() + timeout_s if bounded else math.inf
        cur = conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cur
            except BaseException:
                conn.rollback()
                raise
            else:
                conn.commit()
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.rollback()
            raise StoreUnavailable(
                f"the SQLite state store did not answer within {timeout_s:g} s ({exc})"
            ) from None
        finally:
            self._local.deadline = math.inf
            cur.close()

    def check(self, timeout_s: float) -> None:
        conn = self._connection()
        conn.execute(f"PRAGMA busy_timeout={max(1, round(timeout_s * 1000))}")
        try:
            with self._transaction(write=True, timeout_s=timeout_s) as cur:
                self._check(cur)
        finally:
            conn.execute(f"PRAGMA busy_timeout={round(self.timeout_s * 1000)}")

    def _table_exists(self, cur: Cursor, table: str) -> bool:
        cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        return cur.fetchone() is not None

    def _duplicate_key(self, exc: Exception) -> UniqueKey | None:
        # "UNIQUE constraint failed: decisions.event_id"; a NOT NULL or CHECK failure is no
        # duplicate
        if not isinstance(exc, sqlite3.IntegrityError):
            return None
        _, _, columns = str(exc).partition("UNIQUE constraint failed: ")
        return UNIQUE_KEYS.get(columns)

    def next_sequence(self) -> int:
        with self._lock:
            return next(self._sequence)

    def _restart_sequence(self, cur: Cursor) -> None:
        with self._lock:
            self._sequence = itertools.count(1)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()
        if self._owner is not None:
            os.close(self._owner)  # releases the lock
            self._owner = None
