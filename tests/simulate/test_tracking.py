"""A simulation and an evaluation tracked in a real MLflow store, like the bench."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.policy_logs import HAND_MADE
from tipbench.evaluate import evaluate, log_evaluation, traffic_from_rows
from tipbench.simulate import SimulationConfig, log_simulation, simulate
from tipbench.tracking import KIND_TAG, TrackingStore


def test_a_simulation_is_a_parent_run_with_a_run_per_policy_and_seed(
    sqlite_uri: str, tmp_path: Path
) -> None:
    config = SimulationConfig(policies="egreedy-v1,linucb", seeds=3, days=4, users=6)
    simulation = simulate(config)
    store = TrackingStore(sqlite_uri)
    runs = log_simulation(store, "tip-policy-sim-test", simulation)
    assert runs.seed_runs == 6
    client = store.client
    parent = client.get_run(runs.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags[KIND_TAG] == "policy_simulation"
    assert parent.data.params["policies"] == "egreedy-v1,linucb"
    assert parent.data.params["personas"].startswith("student,engineer,parent,retiree")
    assert "diff.linucb" in parent.data.metrics and "p_value.linucb" in parent.data.metrics
    artifacts = {a.path for a in client.list_artifacts(runs.parent_run_id)}
    assert artifacts == {"simulation.json", "personas.csv", "cumulative_reward.png"}
    png = Path(
        client.download_artifacts(runs.parent_run_id, "cumulative_reward.png", str(tmp_path))
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = Path(client.download_artifacts(runs.parent_run_id, "personas.csv", str(tmp_path)))
    lines = table.read_text().splitlines()
    assert lines[0].startswith("policy,persona,reward,reward_low,reward_high")
    assert any(line.startswith("linucb,retiree,") for line in lines)
    children = client.search_runs(
        [runs.experiment_id], f"tags.mlflow.parentRunId = '{runs.parent_run_id}'"
    )
    assert len(children) == 6
    child = next(c for c in children if c.data.params["policy"] == "linucb")
    assert child.data.params["alpha"] == "1.0" and child.data.params["days"] == "4"
    history = client.get_metric_history(child.info.run_id, "reward")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == [0, 1, 2, 3]
    assert child.data.metrics["mean_reward"] == pytest.approx(
        simulation.report.policy("linucb").per_seed[int(child.data.params["world_seed"])]
    )


def test_an_evaluation_is_one_run(sqlite_uri: str) -> None:
    report = evaluate(traffic_from_rows(HAND_MADE), min_decisions=1, min_ess=0)
    store = TrackingStore(sqlite_uri)
    run_id = log_evaluation(store, "tip-policy-eval-test", report, "log.jsonl", min_decisions=1)
    run = store.client.get_run(run_id)
    assert run.data.tags[KIND_TAG] == "policy_evaluation"
    assert run.data.tags["status.egreedy-v2"] == "estimated"
    assert run.data.params["source"] == "log.jsonl"
    assert run.data.metrics["dr.egreedy-v2"] == pytest.approx(9.8 / 4)
    assert run.data.metrics["observed.egreedy-v1"] == pytest.approx(2.5 / 4)
    assert {a.path for a in store.client.list_artifacts(run_id)} == {"evaluation.json"}
