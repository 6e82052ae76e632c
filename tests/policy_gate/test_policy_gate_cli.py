"""`tipbench policy simulate|evaluate|promote` as a user runs them: output, exit codes, the
serving state's roles and what MLflow records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.cli import assert_one_line_error, tipbench
from support.policy_state import serve_world
from tipbench.policy_service import Roles, open_store
from tipbench.tracking import KIND_TAG, TrackingStore


@pytest.fixture(scope="module")
def served_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state where egreedy-v1 served a simulated world with linucb as its shadow."""
    path = tmp_path_factory.mktemp("state") / "state.sqlite"
    serve_world(f"sqlite:///{path}", Roles("egreedy-v1", ("linucb",)), seed=0)
    return path


@pytest.fixture
def state(served_state: Path, tmp_path: Path) -> str:
    copy = tmp_path / "state.sqlite"
    shutil.copy(served_state, copy)
    return f"sqlite:///{copy}"


def roles(url: str) -> Roles | None:
    store = open_store(url, create=False)
    try:
        return store.roles()
    finally:
        store.close()


def test_promote_dry_run_then_apply_then_refuse(state: str, sqlite_uri: str) -> None:
    store = open_store(state, create=False)
    try:  # production's settings of the challenger, which the simulation must use
        store.update_config(
            lambda stored: {**stored, "policies": {"egreedy-v2": {"epsilon": 0.05}}}
        )
    finally:
        store.close()
    common = ("--state-url", state, "--tracking-uri", sqlite_uri)
    # 1,260 served decisions cannot rule out a loss of 0.01 per decision: refused, asking
    # for as much more shadow traffic as gives 80% power
    thin = tipbench("policy", "promote", "--challenger", "egreedy-v2", *common)
    assert thin.returncode == 3, thin.stdout + thin.stderr
    lines = thin.stdout.splitlines()
    assert lines[0] == "REFUSE egreedy-v2 (live now: egreedy-v1)"
    assert lines[3].startswith("  [ ] not worse off-policy: DR egreedy-v2 ")  # replayed
    assert ": cannot rule out a loss of 0.01: about " in lines[3]
    assert lines[3].endswith(
        " more shadow decisions to rule it out with 80% power (if the difference stays where it is)"
    )

    common = (*common, "--off-policy-margin", "0.1")  # a loss of 0.1 is ruled out
    dry = tipbench("policy", "promote", "--challenger", "egreedy-v2", *common)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0] == "PROMOTE egreedy-v2 (live now: egreedy-v1)"
    assert lines[1] == "  [x] not live already: the live policy is egreedy-v1"
    assert lines[2].startswith("  [x] beats live in the simulator: egreedy-v2 − egreedy-v1 = +")
    assert lines[3].startswith("  [x] not worse off-policy: DR egreedy-v2 ")  # replayed
    assert "vs observed egreedy-v1 " in lines[3] and "over 1,260 decisions" in lines[3]
    assert lines[3].endswith(": a loss of 0.1 ruled out (lower bound > −0.1)")
    assert lines[4].startswith("dry run: nothing changed")
    assert roles(state) == Roles("egreedy-v1", ("linucb",))

    applied = tipbench("policy", "promote", "--challenger", "egreedy-v2", "--apply", *common)
    assert applied.returncode == 0, applied.stderr
    assert "live: egreedy-v2; shadows: egreedy-v1, linucb" in applied.stdout
    assert roles(state) == Roles("egreedy-v2", ("egreedy-v1", "linucb"))
    store = TrackingStore(sqlite_uri)
    experiment = store.experiment_id("tip-policy-sim")
    decisions = list(store.search(experiment, f"tags.`{KIND_TAG}` = 'policy_promotion'"))
    assert len(decisions) == 1
    tags = decisions[0].data.tags
    assert (tags["decision"], tags["live_before"], tags["live_after"]) == (
        "promoted", "egreedy-v1", "egreedy-v2",
    )  # fmt: skip
    assert store.client.get_run(tags["simulation_run"]).data.tags[KIND_TAG] == "policy_simulation"
    seed_runs = store.client.search_runs(
        [experiment], f"tags.mlflow.parentRunId = '{tags['simulation_run']}'"
    )
    settings = {(r.data.params["policy"], r.data.params["epsilon"]) for r in seed_runs}
    assert settings == {("egreedy-v1", "0.1"), ("egreedy-v2", "0.05")}
    assert store.client.get_run(tags["evaluation_run"]).data.tags[KIND_TAG] == "policy_evaluation"
    artifact = store.client.download_artifacts(decisions[0].info.run_id, "decision.json")
    evidence = json.loads(Path(artifact).read_text())
    assert evidence["promote"] is True
    assert [c["name"] for c in evidence["conditions"]][1] == "beats live in the simulator"

    again = tipbench("policy", "promote", "--challenger", "egreedy-v2", "--apply", *common)
    assert again.returncode == 3, again.stderr
    assert again.stdout.splitlines()[:2] == [
        "REFUSE egreedy-v2 (live now: egreedy-v2)",
        "  [ ] not live already: egreedy-v2 is the live policy",
    ]
    assert "refusal recorded in run" in again.stdout
    assert roles(state) == Roles("egreedy-v2", ("egreedy-v1", "linucb"))


def test_a_refusal_changes_nothing(state: str, sqlite_uri: str) -> None:
    result = tipbench(
        "policy", "promote", "--challenger", "linucb", "--margin", "0.5", "--format", "json",
        "--state-url", state, "--tracking-uri", sqlite_uri,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    decision = json.loads(result.stdout)
    assert decision["promote"] is False and decision["applied"] is False
    simulator = decision["conditions"][1]
    assert simulator["passed"] is False and simulator["figure"].endswith("(below the margin)")
    assert roles(state) == Roles("egreedy-v1", ("linucb",))


def test_bad_input_is_one_line(tmp_path: Path, state: str) -> None:
    assert_one_line_error(
        tipbench("policy", "promote", "--challenger", "greedy", "--state-url", state),
        "unknown policy 'greedy'",
    )
    missing = f"sqlite:///{tmp_path / 'nope.sqlite'}"
    assert_one_line_error(
        tipbench("policy", "promote", "--challenger", "linucb", "--state-url", missing),
        "no policy state at",
    )
    assert_one_line_error(tipbench("policy", "simulate", "--seeds", "0"), "--seeds")
    assert_one_line_error(
        tipbench("policy", "simulate", "--policies", "egreedy-v1,greedy"), "unknown policy 'greedy'"
    )
    assert_one_line_error(
        tipbench("policy", "evaluate", "--state-url", state, "--log", str(tmp_path / "x.jsonl")),
        "--state-url or --log, not both",
    )
    assert_one_line_error(
        tipbench("policy", "evaluate", "--log", str(tmp_path / "x.jsonl")), "No such file"
    )


def test_simulate_and_evaluate_report_and_record(
    state: str, sqlite_uri: str, tmp_path: Path
) -> None:
    simulated = tipbench(
        "policy", "simulate", "--policies", "egreedy-v1,linucb", "--seeds", "3", "--days", "2",
        "--users", "5", "--format", "json", "--tracking-uri", sqlite_uri,
    )  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    report = json.loads(simulated.stdout)
    assert report["live"] == "egreedy-v1" and report["seeds"] == [0, 1, 2]
    assert [p["policy"] for p in report["policies"]] == ["egreedy-v1", "linucb"]
    assert report["policies"][1]["vs_live"]["n_pairs"] == 3
    store = TrackingStore(sqlite_uri)
    assert store.client.get_run(report["run_id"]).data.params["users"] == "5"

    log = tmp_path / "log.jsonl"
    exported = tipbench("policy", "log", "export", "--state-url", state, "--out", str(log))
    assert exported.returncode == 0, exported.stderr
    evaluated = tipbench("policy", "evaluate", "--log", str(log), "--tracking-uri", sqlite_uri)
    assert evaluated.returncode == 0, evaluated.stderr
    text = evaluated.stdout
    assert "1,260 logged decisions, 1,260 rewarded; live: egreedy-v1" in text
    assert "  linucb        logged    " in text
    assert "DR minus egreedy-v1's observed reward, on its decisions:" in text
    assert "recorded in MLflow: experiment 'tip-policy-sim', run " in text
