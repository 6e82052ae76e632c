"""The store's side of readiness: `check` answers in time or raises `StoreUnavailable`, a
store that cannot answer raises `StoreUnavailable` (never a driver's error), and only
`policy serve` creates a store that does not exist."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from support.postgres import PostgresCluster
from tipbench import ConfigError
from tipbench.policy_service import StateStore, StoreUnavailable, open_store


def test_check_passes_on_a_store_that_answers(store: StateStore) -> None:
    store.check(0.5)
    assert store.roles() is None  # nothing was written


def test_check_refuses_a_sqlite_store_another_writer_holds(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    store = open_store(f"sqlite:///{path}")
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailable, match="database is locked"):
            store.check(0.2)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    store.check(0.2)
    store.close()


@pytest.mark.slow
def test_check_refuses_a_locked_postgresql_table(postgres: PostgresCluster) -> None:
    url = postgres.database()
    store = open_store(url)
    try:
        with psycopg.connect(url) as locker:
            locker.execute("LOCK TABLE arms IN SHARE MODE")  # reads pass; writes would wait
            with pytest.raises(StoreUnavailable, match="timeout"):
                store.check(0.2)
            locker.rollback()
        store.check(0.2)
    finally:
        store.close()


@pytest.mark.slow
def test_a_stopped_postgresql_raises_store_unavailable_then_recovers(tmp_path: Path) -> None:
    with PostgresCluster() as cluster:
        store = open_store(cluster.database())
        for _ in range(3):  # pooled connections
            store.roles()
        cluster.stop_server()
        for _ in range(3):
            with pytest.raises(StoreUnavailable):
                store.roles()
        cluster.start_server()
        assert store.roles() is None  # the pool reconnects: no stale connection handed out
        store.close()


def export(url: str, out: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "log", "export", "--state-url", url,
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TIPBENCH_HOME": str(home)},
    )  # fmt: skip


def test_export_from_a_store_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    """A mistyped --state-url created an empty store and exported 0 rows with exit 0."""
    mistyped = tmp_path / "stat.sqlite"
    result = export(f"sqlite:///{mistyped}", tmp_path / "log.jsonl", tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"no policy state at sqlite:///{mistyped}" in result.stderr
    assert not mistyped.exists() and not (tmp_path / "log.jsonl").exists()
    with pytest.raises(ConfigError, match="no policy state"):
        open_store(f"sqlite:///{mistyped}", create=False)


@pytest.mark.slow
def test_export_from_an_empty_postgresql_database_is_an_error(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    url = postgres.database()
    result = export(url, tmp_path / "log.jsonl", tmp_path)
    assert result.returncode == 2 and "no policy state at postgresql://" in result.stderr
    with psycopg.connect(url) as conn:  # and it created nothing there
        assert conn.execute("SELECT to_regclass('decisions')").fetchone() == (None,)
    open_store(url).close()  # `policy serve` creates it; then it exports
    assert export(url, tmp_path / "log.jsonl", tmp_path).returncode == 0


def test_out_where_no_folder_can_be_made_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    open_store(url).close()
    (tmp_path / "a-file").write_text("")
    result = export(url, tmp_path / "a-file" / "log.jsonl", tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "a-file/log.jsonl: cannot write there" in result.stderr


def test_stores_opened_at_the_same_moment_all_open(tmp_path: Path) -> None:
    """The admin server's Policies page reads the roles and the evaluation at once: each
    opens the SQLite state, and one switching the file to WAL while another held a lock got
    `database is locked` at once (no busy timeout yet), as if there were no state."""
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    open_store(url).close()
    failures: list[BaseException] = []

    def open_and_read() -> None:
        for _ in range(30):
            try:
                store = open_store(url, create=False)
                try:
                    store.roles()
                finally:
                    store.close()
            except BaseException as exc:  # reported below
                failures.append(exc)

    threads = [threading.Thread(target=open_and_read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
