"""`policy promote --apply` on a PostgreSQL state shared by two running replicas: both serve
with the new live policy at once, without a restart, the old one scoring as a shadow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import tipbench
from support.policy_server import PolicyServer
from support.policy_state import serve_world
from support.postgres import PostgresCluster
from tipbench.policy_service import Roles

pytestmark = pytest.mark.slow

REQUEST = {
    "user_id": "u1",
    "context": {"local_hour": 8, "weekday": 1, "open_tasks": 3, "minutes_to_deadline": 600},
    "candidates": [
        {"tip_id": "focus-25", "category": "focus"},
        {"tip_id": "break-walk", "category": "break"},
    ],
}


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresCluster]:
    with PostgresCluster() as cluster:
        yield cluster


def test_running_replicas_follow_a_promotion(
    tmp_path: Path, postgres: PostgresCluster, sqlite_uri: str
) -> None:
    url = postgres.database()
    serve_world(url, Roles("egreedy-v1", ("linucb",)), seed=0)
    with (
        PolicyServer(tmp_path / "a", url) as a,
        PolicyServer(tmp_path / "b", url) as b,
    ):
        for replica in (a, b):
            with replica.client() as client:
                assert client.post("/serve", json=REQUEST).json()["policy"] == "egreedy-v1"
        promoted = tipbench(
            "policy", "promote", "--challenger", "egreedy-v2", "--apply",
            "--off-policy-margin", "0.1",  # 1,260 served decisions rule out a loss of 0.1
            "--state-url", url, "--tracking-uri", sqlite_uri,
        )  # fmt: skip
        assert promoted.returncode == 0, promoted.stderr + promoted.stdout
        for replica in (a, b):
            with replica.client() as client:
                served = client.post("/serve", json=REQUEST).json()
            assert served["policy"] == "egreedy-v2"
            assert set(served["shadows"]) == {"egreedy-v1", "linucb"}
