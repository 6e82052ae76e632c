"""One writer per experiment: a lock that works for local stores and MLflow servers alike.

Two collections into the same experiment at once would both see a cell as missing and both
record it. `experiment_lock` makes them take turns:

- a **local store** (`sqlite:` or a folder) gets an OS file lock beside the store
  (`fcntl.flock`): the kernel releases it the moment its process ends, killed or not;
- **any other store** (an MLflow server, a shared database) gets a **lease held in MLflow
  itself**: a run tagged `tipbench.kind=lock` in the experiment, kept alive by a heartbeat
  tag. A newcomer creates its lease only when it sees none, then looks again and backs off
  if another lease appeared meanwhile (so two can never both hold it, on a store that reads
  its own writes). A lease whose heartbeat has not moved for `ttl_s` seconds of the
  waiter's own clock (no clock is compared across machines), or whose holder is a process
  of this host (and of this process namespace) that no longer exists, is stale and taken
  over.

A lease can be lost while its holder lives: a holder that stalls (a stopped process, a
partitioned machine, a store that answers no heartbeat for `ttl_s`) is taken over, and goes
on when it wakes. So the block is given a `LockHold` to ask before each write: `held()` is
true only while the holder's last acknowledged heartbeat was sent less than half a lease ago
(a waiter takes over no sooner than a whole lease after it) and its lease run still exists;
`lapsed` says whether it ever stopped being true. A holder that finds it false takes the
lock again (`experiment_lock` gives up and reacquires) before it writes anything more.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

from tipbench._errors import TrackingError
from tipbench.tracking._layout import KIND_TAG
from tipbench.tracking._store import TrackingStore, short_error

KIND_LOCK = "lock"
_SCOPE_TAG, _HOLDER_TAG, _HEARTBEAT_TAG = "lock_scope", "lock_holder", "lock_heartbeat"
_PIDNS_TAG = "lock_pid_namespace"
DEFAULT_TTL_S = 30.0
#: A lease's lifetime in seconds, when not the default (a store that answers slowly).
TTL_VARIABLE = "TIPBENCH_LOCK_TTL_S"
_POLL_S = 1.0
_NOT_ACTIVE = "must be in the 'active' state"  # MLflow, writing to a deleted run

Waiting = Callable[[str], None]
"""Told once, with the holder's description, when the lock is taken and we wait."""


def holder_name() -> str:
    """This process, as a lock names its holder: `host pid N`."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def local_store_folder(uri: str) -> Path | None:
    """The folder of a store on this machine (SQLite file or `file:` folder), else None."""
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        return Path(parsed.path[1:]).resolve().parent  # sqlite:///rel.db -> "/rel.db"
    if parsed.scheme in ("", "file"):
        return Path(parsed.path).resolve()
    return None


class LockHold:
    """What the block of `experiment_lock` asks before it writes: whether it still holds
    the lock. A file lock is held until its block ends; a lease only while it beats."""

    def __init__(self, lease: _Lease | None = None) -> None:
        self._lease = lease
        self.lapsed = False  # whether `held()` was ever false

    def held(self) -> bool:
        held = self._lease is None or self._lease.held()
        self.lapsed = self.lapsed or not held
        return held


def lock_ttl_s() -> float:
    """A lease's lifetime: `TIPBENCH_LOCK_TTL_S` seconds, else `DEFAULT_TTL_S`.

    Raises:
        TrackingError: If the variable is not a positive number.
    """
    raw = os.environ.get(TTL_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_TTL_S
    try:
        ttl = float(raw)
    except ValueError:
        ttl = 0.0
    if not ttl > 0:
        raise TrackingError(f"{TTL_VARIABLE}: expected a positive number of seconds, got {raw!r}")
    return ttl


@contextlib.contextmanager
def experiment_lock(
    store: TrackingStore,
    experiment_id: str,
    scope: str,
    *,
    waiting: Waiting | None = None,
    ttl_s: float | None = None,
) -> Iterator[LockHold]:
    """Hold the experiment's lock for `scope` (e.g. "collect") while the block runs.

    Waits, as long as it takes, while another process holds it; `waiting` is told who. A
    lease lives `ttl_s` seconds without a heartbeat (default `lock_ttl_s()`).

    Raises:
        TrackingError: If the lock cannot be set up (an unwritable folder, a store that
            refuses the lease run).
    """
    folder = local_store_folder(store.uri)
    if folder is not None:
        with _file_lock(folder, experiment_id, scope, waiting):
            yield LockHold()
        return
    lease = _Lease(store, experiment_id, scope, lock_ttl_s() if ttl_s is None else ttl_s)
    lease.acquire(waiting)
    try:
        yield LockHold(lease)
    finally:
        lease.release()


@contextlib.contextmanager
def _file_lock(
    folder: Path, experiment_id: str, scope: str, waiting: Waiting | None
) -> Iterator[None]:
    import fcntl

    locks = folder / ".tipbench-locks"
    path = locks / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', experiment_id)}.{scope}.lock"
    try:
        locks.mkdir(parents=True, exist_ok=True)
        handle: IO[str] = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise TrackingError(f"cannot create the lock file {path}: {exc.strerror}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            if waiting is not None:
                waiting(handle.read().strip() or "another process")
            fcntl.flock(handle, fcntl.LOCK_EX)  # the kernel wakes us when the holder ends
        handle.seek(0)
        handle.truncate()
        handle.write(holder_name())
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class _Seen:
    """A lease another process holds, as this waiter last saw it."""

    heartbeat: str
    since: float  # monotonic time the heartbeat was first seen at this value


class _Lease:
    """The lock as a run in the experiment, kept alive by a heartbeat thread."""

    def __init__(self, store: TrackingStore, experiment_id: str, scope: str, ttl_s: float) -> None:
        self.store, self.experiment_id, self.scope, self.ttl_s = store, experiment_id, scope, ttl_s
        self.run_id: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: dict[str, _Seen] = {}
        self._confirmed_at = 0.0  # monotonic time the last acknowledged heartbeat was sent
        self._lost = threading.Event()  # its run was deleted: another process took over

    def held(self) -> bool:
        """Whether no waiter can have taken the lease over: its last acknowledged heartbeat
        was sent less than half a lease ago (a waiter waits a whole lease from the moment
        it first saw that heartbeat, which is after it was sent)."""
        fresh = time.monotonic() - self._confirmed_at < self.ttl_s / 2
        return self.run_id is not None and fresh and not self._lost.is_set()

    def acquire(self, waiting: Waiting | None) -> None:
        told = False
        while True:
            holders = self._live_leases()
            if not holders:
                sent = time.monotonic()
                mine = self._create()
                if not [r for r in self._live_leases() if r != mine]:
                    self.run_id, self._confirmed_at = mine, sent
                    break
                self._delete(mine)  # someone came at the same time: back off, try again
            elif waiting is not None and not told:
                waiting(", ".join(holders.values()))
                told = True
            time.sleep(_POLL_S * (0.5 + random.random()))
        self._thread = threading.Thread(target=self._beat, name="tipbench-lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.run_id is not None:
            self._delete(self.run_id)
            self.run_id = None

    def _live_leases(self) -> dict[str, str]:
        """The leases of this scope that are alive: run id -> holder. Stale ones are removed."""
        query = f"tags.`{KIND_TAG}` = '{KIND_LOCK}' AND tags.{_SCOPE_TAG} = '{self.scope}'"
        live: dict[str, str] = {}
        now = time.monotonic()
        for run in self.store.search(self.experiment_id, query):
            run_id, tags = run.info.run_id, run.data.tags
            holder = tags.get(_HOLDER_TAG, "?")
            heartbeat = tags.get(_HEARTBEAT_TAG, "")
            seen = self._seen.get(run_id)
            if seen is None or seen.heartbeat != heartbeat:
                self._seen[run_id] = seen = _Seen(heartbeat, now)
            gone = tags.get(_PIDNS_TAG) == _pid_namespace() and _gone(holder)
            if gone or now - seen.since > self.ttl_s:
                self._delete(run_id)  # stale: its holder died or stopped beating
            else:
                live[run_id] = holder
        return live

    def _create(self) -> str:
        tags = {
            KIND_TAG: KIND_LOCK,
            _SCOPE_TAG: self.scope,
            _HOLDER_TAG: holder_name(),
            _HEARTBEAT_TAG: "0",
            _PIDNS_TAG: _pid_namespace(),
        }
        try:
            run = self.store.client.create_run(
                self.experiment_id, run_name=f"lock {self.scope}", tags=tags
            )
        except Exception as exc:
            raise TrackingError(
                f"cannot take the {self.scope} lock at {self.store.uri}: {short_error(exc)}"
            ) from None
        return str(run.info.run_id)

    def _delete(self, run_id: str) -> None:
        with contextlib.suppress(Exception):  # already gone is fine
            self.store.client.delete_run(run_id)

    def _beat(self) -> None:
        run_id, beat = self.run_id, 0
        while run_id is not None and not self._stop.wait(self.ttl_s / 4):
            beat += 1
            sent = time.monotonic()
            try:
                self.store.client.set_tag(run_id, _HEARTBEAT_TAG, str(beat))
            except Exception as exc:  # a missed beat is retried by the next one
                if _NOT_ACTIVE in str(exc):  # deleted: another process took the lease over
                    self._lost.set()
                    return
                continue
            self._confirmed_at = sent


def _pid_namespace() -> str:
    """This process's PID namespace (containers on one host have their own): a holder's
    pid is looked up only from the same one."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def _gone(holder: str) -> bool:
    """Whether `holder` names a process of this host that no longer exists (asked only
    of a holder of this PID namespace)."""
    host, _, pid = holder.rpartition(" pid ")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
