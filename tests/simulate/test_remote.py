"""`policy simulate --url`: simulated users served end to end through a running `policy serve`
(a real subprocess) as the app would (`/serve`, `/reward`): the server's live policy decides,
its shadows log and learn, in a user-id namespace of its own; nothing is reset or deleted,
and the log then holds the shadow traffic the gate reads. A state that holds decisions is
refused unless told."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.policy_server import TOKEN, PolicyServer
from tipbench.evaluate import evaluate, traffic_from_rows
from tipbench.policy_service import decision_rows, open_store
from tipbench.simulate import (
    RemoteTarget,
    SimulationConfig,
    load_study,
    make_world,
    simulate_remote,
)

pytestmark = pytest.mark.slow


def simulate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TIPBENCH_POLICY_TOKEN": TOKEN}
    env.pop("TIPBENCH_POLICY_ADMIN_TOKEN", None)  # no admin token is needed: nothing is reset
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "simulate", *args],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def logged_rows(state: str) -> list[dict[str, object]]:
    store = open_store(state, create=False)  # beside the server, as `policy log export` does
    try:
        return list(decision_rows(store))
    finally:
        store.close()


def test_simulated_users_are_served_through_the_service(tmp_path: Path, sqlite_uri: str) -> None:
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    config = SimulationConfig(seeds=2, days=1, users=4)
    with PolicyServer(tmp_path, state, "--live", "egreedy-v1", "--shadows", "egreedy-v2") as server:
        lines: list[str] = []
        simulation = simulate_remote(config, RemoteTarget(server.url, TOKEN), lines.append)
        namespace = lines[0].rsplit("(", 1)[1].rstrip(")")
        assert lines == [f"seed {s}: /serve 12 decisions ({namespace})" for s in (0, 1)]
        report = simulation.report
        assert report.live == "egreedy-v1" and report.policy_names == ("egreedy-v1", "egreedy-v2")
        assert simulation.study.config.policies == ("egreedy-v1", "egreedy-v2")  # the server's
        shadow = report.policy("egreedy-v2")
        assert shadow.vs_live is not None and shadow.vs_live.n_pairs == 2

        rows = logged_rows(state)
        assert len(rows) == 24  # both seeds: nothing was reset or deleted
        assert {r["route"] for r in rows} == {"serve"} and {r["policy"] for r in rows} == {
            "egreedy-v1"
        }
        assert all(str(r["user_id"]).startswith(f"{namespace}-s") for r in rows)
        assert all(str(r["event_id"]).startswith(f"{namespace}-s") for r in rows)
        assert all(r["reward"] is not None for r in rows)
        # the shadow's figures are what its logged would-be choices earn in the same worlds
        study = load_study(config)
        for seed in (0, 1):
            world = make_world(study.population, study.catalogue, seed, 4, 1)
            seeded = [r for r in rows if f"-s{seed}-" in str(r["event_id"])]
            picks = [
                [c["tip_id"] for c in r["candidates"]].index(r["shadows"][0]["tip_id"])  # type: ignore[index]
                for r in seeded
            ]
            earned = world.reward[np.arange(world.steps), picks].mean()
            assert shadow.per_seed[seed] == pytest.approx(earned)
        traffic = traffic_from_rows(rows)
        assert traffic.score_left_out == 0 and "egreedy-v2" in traffic.targets
        assert evaluate(traffic, min_decisions=10).policy("egreedy-v2").decisions == 24

        with server.client() as client:
            stats = client.get("/stats").json()["policies"]
        assert stats["egreedy-v1"]["decisions"] == stats["egreedy-v1"]["rewards"] == 24
        assert stats["egreedy-v2"]["shadow_decisions"] == 24

        # the state now holds decisions: a second simulation is refused, in one line
        refused = simulate_cli("--url", server.url, "--seeds", "1", "--days", "1", "--users", "2")
        assert refused.returncode == 2, refused.stderr
        assert "holds 24 decisions of other users: refusing" in refused.stderr
        assert "Traceback" not in refused.stderr
        # unless told: then it adds its decisions to the log, deleting none
        shared = simulate_cli(
            "--url", server.url, "--shared-state", "--seeds", "1", "--days", "1", "--users", "2",
            "--format", "json", "--tracking-uri", sqlite_uri,
        )  # fmt: skip
        assert shared.returncode == 0, shared.stderr
        assert [p["policy"] for p in json.loads(shared.stdout)["policies"]] == [
            "egreedy-v1", "egreedy-v2",
        ]  # fmt: skip
        after = logged_rows(state)
        assert len(after) == 24 + 6
        assert {r["decision_id"] for r in rows} <= {r["decision_id"] for r in after}


def test_the_servers_roles_decide(tmp_path: Path) -> None:
    result = simulate_cli("--url", "http://127.0.0.1:9", "--policies", "egreedy-v1,linucb")
    assert result.returncode == 2
    assert "--url: the server's roles decide" in result.stderr
    assert "Traceback" not in result.stderr
