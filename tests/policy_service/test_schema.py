"""The state's tables at scale and across versions: the log's pages are index range scans,
`/stats` reads counters that concurrent writers keep exact, a state written by the previous
version (schema 1) is migrated in place when opened, and the log's rows are written and read
by the tables' own columns."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
import pytest

from support.policy_state import CANDIDATES, MOMENT, make_service
from support.postgres import PostgresCluster
from tipbench.policies import ArmStats
from tipbench.policy_service import Roles, StateStore, open_store
from tipbench.policy_service.store._rows import DECISION_COLUMNS, SHADOW_COLUMNS
from tipbench.policy_service.store._sql import PAGE_WHERE

# The tables of schema 1, as the previous version created them (SQLite types).
VERSION_1 = """
CREATE TABLE decisions (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL, created_at TEXT NOT NULL,
    user_id TEXT NOT NULL, policy TEXT NOT NULL, route TEXT NOT NULL, moment TEXT NOT NULL,
    feature_version TEXT NOT NULL, features TEXT NOT NULL, candidates TEXT NOT NULL,
    tip_id TEXT NOT NULL, category TEXT NOT NULL, propensity REAL NOT NULL,
    reward REAL, event TEXT, dwell_s REAL, rewarded_at TEXT);
CREATE INDEX decisions_seq ON decisions (seq, id);
CREATE TABLE shadow_decisions (
    decision_id TEXT NOT NULL, policy TEXT NOT NULL, feature_version TEXT NOT NULL,
    features TEXT NOT NULL, candidates TEXT NOT NULL, tip_id TEXT NOT NULL,
    propensity REAL NOT NULL, PRIMARY KEY (decision_id, policy));
CREATE TABLE arms (
    policy TEXT NOT NULL, category TEXT NOT NULL, xx BLOB NOT NULL, rx BLOB NOT NULL,
    n INTEGER NOT NULL, PRIMARY KEY (policy, category));
CREATE TABLE profiles (
    user_id TEXT PRIMARY KEY, responses INTEGER NOT NULL DEFAULT 0,
    completed INTEGER NOT NULL DEFAULT 0, dismissed INTEGER NOT NULL DEFAULT 0,
    dwell_n INTEGER NOT NULL DEFAULT 0, dwell_sum_s REAL NOT NULL DEFAULT 0,
    completed_hour_sin REAL NOT NULL DEFAULT 0, completed_hour_cos REAL NOT NULL DEFAULT 0);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)
"""
X = [1.0, 0.5, -0.5, 0.0, 1.0, 0.7, 0.0]
CANDIDATES_JSON = json.dumps(
    [
        {"tip_id": "t1", "category": "focus", "score": 0.0, "probability": 0.95},
        {"tip_id": "t2", "category": "break", "score": 0.0, "probability": 0.05},
    ]
)
MOMENT_JSON = json.dumps(
    {"local_hour": 8, "weekday": 1, "open_tasks": 3, "minutes_to_deadline": None, "tips_today": 0}
)


@contextmanager
def raw(url: str) -> Iterator[Any]:
    """A plain driver connection to the state (autocommit), and its placeholder."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            yield conn, "?"
        finally:
            conn.close()
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            yield conn, "%s"


def write_version_1_state(url: str) -> None:
    """Two decisions of egreedy-v1 with a linucb shadow, the first rewarded (the shadow did
    not learn then), and the roles, as schema 1 held them."""
    arm = ArmStats.empty(7).updated(np.array(X), 1.0)
    with raw(url) as (conn, mark):
        for statement in VERSION_1.split(";"):
            if mark == "%s":  # PostgreSQL's names of the types
                statement = statement.replace("BLOB", "BYTEA").replace("REAL", "DOUBLE PRECISION")
            conn.execute(statement)
        marks = ", ".join([mark] * 17)
        for i, reward in ((1, 1.0), (2, None)):
            conn.execute(
                f"INSERT INTO decisions VALUES ({marks})",
                (f"d{i}", i, f"2026-01-0{i}T08:00:00+00:00", "u1", "egreedy-v1", "serve",
                 MOMENT_JSON, "v1", json.dumps(X), CANDIDATES_JSON, "t1", "focus", 0.95,
                 reward, "completed" if reward else None, None,
                 "2026-01-01T09:00:00+00:00" if reward else None),
            )  # fmt: skip
            conn.execute(
                f"INSERT INTO shadow_decisions VALUES ({', '.join([mark] * 7)})",
                (f"d{i}", "linucb", "v2", json.dumps([*X, 0.25, 0.25, 0.05, 0.0, 0.0]),
                 CANDIDATES_JSON, "t2", 0.05),
            )  # fmt: skip
        conn.execute(
            f"INSERT INTO arms VALUES ({', '.join([mark] * 5)})",
            ("egreedy-v1", "focus", *arm.to_bytes(), 1),
        )
        conn.execute(
            f"INSERT INTO profiles (user_id, responses, completed) VALUES ({mark}, 1, 1)", ("u1",)
        )
        if mark == "%s":  # schema 1 numbered decisions with a sequence on PostgreSQL
            conn.execute("CREATE SEQUENCE decision_seq")
            conn.execute("SELECT setval('decision_seq', 2)")
        conn.execute(
            f"INSERT INTO settings VALUES ('roles', {mark})",
            (json.dumps({"live": "egreedy-v1", "shadows": ["linucb"]}),),
        )


@pytest.fixture
def v1_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.sqlite'}"
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return cluster.database()


@pytest.mark.parametrize("v1_url", ["sqlite", "postgresql"], indirect=True)
def test_a_version_1_state_is_migrated_in_place(v1_url: str) -> None:
    write_version_1_state(v1_url)
    store = open_store(v1_url)
    try:
        roles = store.roles()
        assert roles is not None and (roles.live, roles.shadows) == ("egreedy-v1", ("linucb",))
        counts = store.counts("egreedy-v1")
        assert (counts.decisions, counts.rewards, counts.reward_sum) == (2, 1, 1.0)
        assert counts.events == {"completed": 1}
        assert store.counts("linucb").shadow_decisions == 2
        logged = list(store.decisions())
        assert [d.record.id for d in logged] == ["d1", "d2"]
        assert logged[0].record.decision.settings is None  # not recorded then
        svc = make_service(store)
        svc.reward(None, "d2", 0.5, "viewed", 3.0)  # the shadow learns from now on
        assert store.arms(["linucb"])["linucb"]["focus"].n == 1
        assert store.arms(["egreedy-v1"])["egreedy-v1"]["focus"].n == 2
        assert svc.decide("u2", MOMENT, CANDIDATES).sequence == 3
        svc.reset("user", None, "u1")  # takes back only what was taught
        assert store.arms(["egreedy-v1"])["egreedy-v1"]["focus"].n == 0
        assert store.arms(["linucb"])["linucb"]["focus"].n == 0
    finally:
        store.close()
    again = open_store(v1_url)  # opening a migrated state changes nothing
    try:
        assert again.counts("egreedy-v1").decisions == 1
    finally:
        again.close()


def test_concurrent_writers_keep_the_counters_exact(state_url: str) -> None:
    stores = [open_store(state_url) for _ in range(2)]
    try:
        services = [make_service(s) for s in stores]
        services[0].configure({"live": "egreedy-v2", "shadows": ["linucb"]})
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                svc = services[i % 2]
                for j in range(15):
                    record = svc.decide(f"u{i}", MOMENT, CANDIDATES)
                    if j % 3:
                        svc.reward(None, record.id, 0.5, "viewed", 1.0)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        counts = stores[1].counts("egreedy-v2")
        assert (counts.decisions, counts.rewards) == (90, 60)
        assert counts.reward_sum == pytest.approx(30.0) and counts.events == {"viewed": 60}
        assert stores[1].counts("linucb").shadow_decisions == 90
    finally:
        for s in stores:
            s.close()


def test_a_page_of_the_log_is_an_index_range_scan(postgres: PostgresCluster) -> None:
    """The export's page query is answered from the (seq, id) index, without a sort or a
    filter over the rows before it (which made PostgreSQL exports quadratic)."""
    url = postgres.database()
    store: StateStore = open_store(url)
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO decisions (id, seq, created_at, user_id, policy, route, moment, "
            "feature_version, features, candidates, tip_id, category, propensity) "
            "SELECT md5(g::text), g, '2026-01-01', 'u', 'egreedy-v1', 'serve', '{}', 'v1', "
            "'[]', '[]', 't1', 'focus', 1 FROM generate_series(1, 20000) g"
        )
        conn.execute("ANALYZE decisions")
        where = PAGE_WHERE.replace("?", "%s")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                f"EXPLAIN SELECT * FROM decisions WHERE {where} ORDER BY seq, id LIMIT 1000",
                (10000, ""),
            )
        )
    assert "Index Scan using decisions_seq" in plan, plan
    assert "Index Cond: (ROW(seq, id) > ROW(" in plan, plan  # starts at the page ...
    assert "Filter" not in plan and "Sort" not in plan, plan  # ... not at the first row


def table_columns(url: str, table: str) -> list[str]:
    with raw(url) as (conn, mark):
        if mark == "?":
            return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        return [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "ORDER BY ordinal_position",
                (table,),
            )
        ]


def test_the_logs_rows_are_the_tables_columns(store: StateStore, state_url: str) -> None:
    """The columns the log writes and reads (named once, in `_rows.py`) are the tables' own,
    all of them but the store's `learned` mark; a decision written and read back is whole."""
    assert table_columns(state_url, "decisions") == list(DECISION_COLUMNS)
    assert table_columns(state_url, "shadow_decisions") == [*SHADOW_COLUMNS, "learned"]
    store.set_roles(Roles("egreedy-v1", ("linucb",)))
    made = make_service(store).decide("u1", MOMENT, CANDIDATES, event_id="e1")
    assert [s.policy for s in made.shadows] == ["linucb"]
    logged = store.decision_for_event("e1")
    assert logged is not None and logged.record == made and logged.reward is None
