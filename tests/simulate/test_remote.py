"""`policy simulate --url`: the same simulation end to end through a running `policy serve`
(a real subprocess), in its own user-id namespace, refusing a state that holds decisions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.policy_server import TOKEN, PolicyServer
from tipbench.simulate import SimulationConfig
from tipbench.simulate._remote import RemoteTarget, simulate_remote
from tipbench_dev.servers import POLICY_ADMIN_TOKEN

pytestmark = pytest.mark.slow


def simulate_cli(*args: str, admin: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TIPBENCH_POLICY_TOKEN": TOKEN}
    env.pop("TIPBENCH_POLICY_ADMIN_TOKEN", None)
    if admin:
        env["TIPBENCH_POLICY_ADMIN_TOKEN"] = POLICY_ADMIN_TOKEN
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "simulate", *args],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def test_a_simulation_through_the_service(tmp_path: Path, sqlite_uri: str) -> None:
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    config = SimulationConfig(policies=("egreedy-v1", "egreedy-v2"), seeds=2, days=1, users=4)
    with PolicyServer(tmp_path, state, "--live", "egreedy-v1") as server:
        target = RemoteTarget(server.url, TOKEN, POLICY_ADMIN_TOKEN)
        lines: list[str] = []
        simulation = simulate_remote(config, target, lines.append)
        assert lines == [
            "seed 0: egreedy-v1 (12 decisions)", "seed 0: egreedy-v2 (12 decisions)",
            "seed 1: egreedy-v1 (12 decisions)", "seed 1: egreedy-v2 (12 decisions)",
        ]  # fmt: skip
        report = simulation.report
        assert report.seeds == (0, 1)
        v2 = report.policy("egreedy-v2")
        assert v2.vs_live is not None and v2.vs_live.n_pairs == 2
        assert all(o.overall.decisions == 12 for o in simulation.outcomes)
        with server.client() as client:
            stats = client.get("/stats").json()["policies"]
            # each policy was reset before each seed: the last seed's decisions remain, rewarded
            for name in ("egreedy-v1", "egreedy-v2"):
                assert stats[name]["decisions"] == stats[name]["rewards"] == 12

        # the state now holds decisions: a second simulation is refused, in one line
        refused = simulate_cli("--url", server.url, "--seeds", "1", "--days", "1", "--users", "2")
        assert refused.returncode == 2, refused.stderr
        assert "holds 24 decisions of other users: refusing" in refused.stderr
        assert "Traceback" not in refused.stderr
        # unless told: then nothing is reset and no admin token is needed
        shared = simulate_cli(
            "--url", server.url, "--shared-state", "--policies", "egreedy-v1", "--seeds", "1",
            "--days", "1", "--users", "2", "--format", "json", "--tracking-uri", sqlite_uri,
            admin=False,
        )  # fmt: skip
        assert shared.returncode == 0, shared.stderr
        assert json.loads(shared.stdout)["policies"][0]["policy"] == "egreedy-v1"
        with server.client() as client:
            assert client.get("/stats/egreedy-v1").json()["decisions"] == 12 + 6


def test_an_own_state_needs_the_admin_token(tmp_path: Path) -> None:
    result = simulate_cli("--url", "http://127.0.0.1:9", "--seeds", "1", admin=False)
    assert result.returncode == 2
    assert "no admin token: set TIPBENCH_POLICY_ADMIN_TOKEN" in result.stderr
