"""The policy service in production, store side, with real parts: `tipbench policy serve`
replicas as subprocesses on a real PostgreSQL (roles that stay put, a locked table answered
with 503, a shadow's update committed with the live one), one SQLite server per file, retries,
and expiry by the serving process's sweep."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support.policy_server import PolicyServer
from support.postgres import PostgresCluster
from tipbench.policy_service import open_store

pytestmark = pytest.mark.slow

FOCUS = [{"tip_id": "t1", "category": "focus"}]
REQUEST: dict[str, Any] = {
    "user_id": "u1",
    "context": {"local_hour": 8, "weekday": 2, "open_tasks": 4, "minutes_to_deadline": None},
    "candidates": [*FOCUS, {"tip_id": "t2", "category": "break"}],
}
SERVE_FLAGS = ("--live", "egreedy-v1", "--shadows", "linucb")


def test_a_new_replica_never_reverts_the_fleets_roles(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    url = postgres.database()
    a = PolicyServer(tmp_path / "a", url, *SERVE_FLAGS)
    with a:
        with a.admin_client() as admin:
            promoted = admin.put("/config", json={"live": "linucb", "shadows": ["egreedy-v1"]})
            assert promoted.status_code == 200, promoted.text
        b = PolicyServer(tmp_path / "b", url, *SERVE_FLAGS)  # the README's same command
        with b:
            with b.client() as client:
                assert client.post("/serve", json=REQUEST).json()["policy"] == "linucb"
            assert (
                "policy config kept from the state (live linucb, shadows [egreedy-v1]); not "
                "applied: live linucb → egreedy-v1; shadows [egreedy-v1] → [linucb] "
                "(pass --reconfigure to apply them)"
            ) in b.log_text()
            with b.admin_client() as admin:  # a partial change keeps what it does not name
                changed = admin.put("/config", json={"policies": {"linucb": {"alpha": 0.5}}})
                assert changed.status_code == 200, changed.text
                admin.put("/config", json={"shadows": ["egreedy-v2"]})
                absurd = admin.put("/config", json={"policies": {"linucb": {"alpha": 1e308}}})
                assert absurd.status_code == 422
                assert absurd.json()["detail"][0]["loc"] == ["body", "policies", "linucb", "alpha"]
            with a.client() as client:
                config = client.get("/config").json()
                assert (config["live"], config["shadows"]) == ("linucb", ["egreedy-v2"])
                assert config["policies"]["linucb"]["alpha"] == 0.5
                decided = client.post("/serve", json=REQUEST).json()
                assert decided["policy"] == "linucb"
        restarted = PolicyServer(
            tmp_path / "b", url, "--live", "egreedy-v2", "--shadows", "", "--reconfigure"
        )
        with restarted:
            assert (
                "policy config changed (--reconfigure): live linucb → egreedy-v2; "
                "shadows [egreedy-v2] → []"
            ) in restarted.log_text()
            with a.client() as client:
                assert client.post("/serve", json=REQUEST).json()["policy"] == "egreedy-v2"
    store = open_store(url)
    try:
        logged = {d.record.id: d.record for d in store.decisions()}
        settings = logged[decided["decision_id"]].decision.settings
        assert settings is not None and settings.alpha == 0.5  # recorded with the decision
    finally:
        store.close()


def test_a_locked_postgresql_table_answers_503_quickly_and_recovers(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    url = postgres.database()
    with (
        PolicyServer(tmp_path / "s", url, "--store-timeout", "0.5") as server,
        server.client(timeout=30) as client,
        psycopg.connect(url) as locker,
    ):
        assert client.post("/serve", json=REQUEST).status_code == 200
        locker.execute("LOCK TABLE decisions IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        stuck = client.post("/serve", json=REQUEST)
        waited = time.monotonic() - started
        assert stuck.status_code == 503 and "did not answer within 0.5 s" in stuck.text
        assert stuck.headers["retry-after"] == "1"
        assert waited < 10  # it hung past 15 s before
        locker.rollback()
        assert client.post("/serve", json=REQUEST).status_code == 200


def test_a_busy_sqlite_store_answers_503_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with (
        PolicyServer(tmp_path / "s", f"sqlite:///{path}", "--store-timeout", "0.3") as server,
        server.client() as client,
    ):
        assert client.post("/serve", json=REQUEST).status_code == 200
        locker = sqlite3.connect(path, isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            busy = client.post("/serve", json=REQUEST)
            assert busy.status_code == 503 and "database is locked" in busy.text
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert client.post("/serve", json=REQUEST).status_code == 200


def test_a_shadows_update_commits_with_the_live_one(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    """The shadow's model row is held by another transaction: the reward cannot commit the
    shadow's update, so it commits nothing (503); once free, both learn in one commit."""
    url = postgres.database()
    one = {**REQUEST, "candidates": FOCUS}
    with (
        PolicyServer(tmp_path / "s", url, *SERVE_FLAGS, "--store-timeout", "0.5") as server,
        server.client() as client,
    ):
        ids = [client.post("/serve", json=one).json()["decision_id"] for _ in range(2)]
        body = {"decision_id": ids[0], "reward": 1.0, "event": "completed"}
        assert client.post("/reward", json=body).status_code == 200
        with psycopg.connect(url) as locker:
            locker.execute("SELECT n FROM arms WHERE policy = 'linucb' FOR UPDATE")
            second = {**body, "decision_id": ids[1]}
            assert client.post("/reward", json=second).status_code == 503
            store = open_store(url)
            try:
                arms = store.arms(["egreedy-v1", "linucb"])
                assert arms["egreedy-v1"]["focus"].n == 1  # the live update rolled back
                pending = store.decision(ids[1])
                assert pending is not None and pending.reward is None
                assert store.counts("egreedy-v1").rewards == 1
            finally:
                store.close()
            locker.rollback()
        retried = client.post("/reward", json=second)
        assert retried.status_code == 200 and retried.json()["policy"] == "egreedy-v1"
    store = open_store(url)
    try:
        arms = store.arms(["egreedy-v1", "linucb"])
        assert arms["egreedy-v1"]["focus"].n == arms["linucb"]["focus"].n == 2
    finally:
        store.close()


def serve_second(path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`policy serve` on `path`, as a second process would start it."""
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "serve", "--port", "0",
         "--state-url", f"sqlite:///{path}"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "TIPBENCH_POLICY_TOKEN": "t" * 20, "TIPBENCH_HOME": str(home)},
    )  # fmt: skip


def test_one_sqlite_state_serves_one_process(tmp_path: Path) -> None:
    path = tmp_path / "state" / "policy.sqlite"
    with PolicyServer(tmp_path / "first", f"sqlite:///{path}") as first:
        second = serve_second(path, tmp_path)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert f"is served by another process already (pid {first.process.pid})" in second.stderr
        assert "run replicas on --state-url postgresql://..." in second.stderr
        for name in ("policy.sqlite", "policy.sqlite-wal", "policy.sqlite-shm"):
            mode = stat.S_IMODE((path.parent / name).stat().st_mode)
            assert mode == 0o600, (name, oct(mode))
        export = subprocess.run(  # other commands may read it beside the server
            [sys.executable, "-m", "tipbench.cli", "policy", "log", "export", "--state-url",
             f"sqlite:///{path}", "--out", str(tmp_path / "log.jsonl")],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "TIPBENCH_HOME": str(tmp_path)},
        )  # fmt: skip
        assert export.returncode == 0, export.stderr
    with PolicyServer(tmp_path / "again", f"sqlite:///{path}"):  # free once it stopped
        pass


def test_one_process_per_sqlite_file_whatever_its_name(tmp_path: Path) -> None:
    """A symlink (the lock was taken on the path as given) and a hard link (another path to
    the same file) name the file a server holds: a second server on either is refused."""
    path = tmp_path / "state" / "policy.sqlite"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with PolicyServer(tmp_path / "first", f"sqlite:///{path}") as first:
        symlink, hard_link = elsewhere / "link.sqlite", elsewhere / "hard.sqlite"
        symlink.symlink_to(path)
        hard_link.hardlink_to(path)
        relative = Path(os.path.relpath(path))
        for name in (symlink, hard_link, relative):
            second = serve_second(name, tmp_path)
            assert second.returncode == 2, (name, second.stderr)
            assert f"is served by another process already (pid {first.process.pid})" in (
                second.stderr
            )
        with first.client() as client:  # the first one serves on, undisturbed
            assert client.post("/serve", json=REQUEST).status_code == 200
    with PolicyServer(tmp_path / "again", f"sqlite:///{hard_link}"):  # free once it stopped
        pass


def test_retries_and_expiry_over_http(tmp_path: Path) -> None:
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    flags = ("--reward-window", "5s", "--default-reward", "0", "--sweep-interval", "0.5s")
    with (
        PolicyServer(tmp_path / "s", state, *SERVE_FLAGS, *flags) as server,
        server.client() as client,
    ):
        first = client.post("/serve", json={**REQUEST, "event_id": "req-1"}).json()
        again = client.post("/serve", json={**REQUEST, "event_id": "req-1"}).json()
        assert again == first
        other = client.post("/serve", json={**REQUEST, "user_id": "u2", "event_id": "req-1"})
        assert other.status_code == 409 and "event_id 'req-1'" in other.text
        assert first["decision_id"] not in other.text  # never another request's decision

        body = {"decision_id": first["decision_id"], "reward": 1.0, "event": "completed"}
        stored = client.post("/reward", json=body).json()
        assert client.post("/reward", json=body).json() == stored
        assert stored["policy"] == "egreedy-v1" and stored["reward"] == 1.0
        changed = client.post("/reward", json={**body, "reward": 0.0, "event": "dismissed"})
        assert changed.status_code == 409

        forgotten = client.post("/serve", json=REQUEST).json()["decision_id"]
        deadline = time.monotonic() + 30
        while client.get("/stats/egreedy-v1").json()["events"].get("expired", 0) < 1:
            assert time.monotonic() < deadline, "nothing expired"
            time.sleep(0.2)
        late = client.post("/reward", json={**body, "decision_id": forgotten})
        assert late.status_code == 409 and "expired at" in late.text
    store = open_store(state)
    try:
        rows = {d.record.id: d for d in store.decisions()}
        expired = rows[forgotten].reward
        assert expired is not None and (expired.event, expired.reward) == ("expired", 0.0)
    finally:
        store.close()
