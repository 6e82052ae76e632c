"""Ctrl-C during an optimization, then the same command again: it continues from its last
finished iteration and ends as an uninterrupted one would, with nothing twice.

The reflection model here answers from its request alone, as a real model does at a fixed
seed (a script consumed in order would not: the interrupted iteration asks again; see
`support.scripted_world.rule_reflection`). Training on the student's two scenarios
(minibatch: both) for a budget of 24, that is: iteration 1 proposes P1 (morning; accepted),
2 proposes P3 from P1 (evening too; accepted), 3 to 5 are skipped proposals (20 spent: a
sixth iteration could spend 6, past the budget).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.ollama_server import FakeOllama
from support.scripted_world import (
    EVENING,
    MORNING,
    REFLECTION,
    TRAINING,
    optimize_args,
    proposal,
    rule_reflection,
    said,
)
from tipbench.optimize import BEST_METRIC, KIND_OPTIMIZATION
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS, DEFAULT_PROMPT_NAME, KIND_TAG

pytestmark = pytest.mark.slow

V1 = load_suite().prompt("v1")
P1_SYSTEM = said(V1, "system", MORNING)
P1 = proposal(P1_SYSTEM, V1.user)
P3 = proposal(P1_SYSTEM, said(V1, "user", EVENING))


def start(world: FakeOllama, uri: str, home: Path) -> subprocess.Popen[str]:
    args = optimize_args(world, uri, "--budget", "24", "--no-heldout")
    return subprocess.Popen(
        [sys.executable, "-m", "tipbench.cli", *args],
        env={**os.environ, "TIPBENCH_HOME": str(home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def recorded_iterations(client: MlflowClient) -> list[int]:
    found = client.get_experiment_by_name("tip-bench-optimize")
    if found is None:
        return []
    runs = client.search_runs([found.experiment_id], f"tags.`{KIND_TAG}` = '{KIND_OPTIMIZATION}'")
    return [m.step for r in runs for m in client.get_metric_history(r.info.run_id, BEST_METRIC)]


def test_ctrl_c_then_the_same_command_resumes_without_duplicates(
    world: FakeOllama, sqlite_uri: str, tipbench_home: Path, ctrl_c: None
) -> None:
    world.respond(REFLECTION, rule_reflection)
    world.token_s = 0.02  # each cell's answer takes about a second: Ctrl-C lands mid-iteration
    MlflowClient(sqlite_uri).search_experiments()  # the store exists: the test polls it
    client = MlflowClient(sqlite_uri)
    first = start(world, sqlite_uri, tipbench_home)
    deadline = time.monotonic() + 300
    while 1 not in recorded_iterations(client):
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "no iteration finished"
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGINT)
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 130, stderr
    assert "interrupted: re-run the same command to resume" in stderr
    done_before = max(recorded_iterations(client))
    assert done_before < 5

    world.token_s = 0.0
    second = start(world, sqlite_uri, tipbench_home)
    stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr
    assert re.search(r"resuming: \d+ of 24 evaluations already spent", stderr), stderr
    assert "20 evaluations, 5 iterations, 2 proposals, 3 skipped proposals" in stdout, stdout
    assert "20 of 24 evaluations spent" in stdout

    steps = recorded_iterations(client)
    assert sorted(steps) == [0, 1, 2, 3, 4, 5]  # each iteration recorded once
    experiment = client.get_experiment_by_name("tip-bench-optimize")
    assert experiment is not None
    cells = client.search_runs([experiment.experiment_id], CELL_RUNS)
    assert Counter(
        (r.data.params["prompt_version"], r.data.params["scenario_id"]) for r in cells
    ) == {(v, s): 1 for v in ("v1", P1, P3) for s in TRAINING}
    assert all(r.info.status == "FINISHED" for r in cells)
    optimizations = client.search_runs(
        [experiment.experiment_id], f"tags.`{KIND_TAG}` = '{KIND_OPTIMIZATION}'"
    )
    assert [r.info.status for r in optimizations] == ["FINISHED"]
    registry = Counter(
        v.tags["prompt_version"] for v in client.search_prompt_versions(DEFAULT_PROMPT_NAME)
    )
    assert registry == {"v1": 1, P1: 1, P3: 1}
    proposed = load_suite(tipbench_home / "suites" / "tips").prompts
    assert sorted(v for v, p in proposed.items() if p.proposal) == sorted([P1, P3])
