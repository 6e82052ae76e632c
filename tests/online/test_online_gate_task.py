"""`bench_judged`'s promotion gate (issue 49, item 5): the task's function counts the online
condition where the policy service has a state, and decides as before where it has none."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.calibrations import log_fake_calibration
from support.judged_runs import AUTO_JUDGE, JudgedCell, uniform, write_cells
from support.online_worlds import OnlineWorld, serve_online_world
from tipbench.orchestration._phases import promotion_gate
from tipbench.promote import promote_prompt
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

MODEL = "ollama:qwen2.5:1.5b"


def test_the_gate_task_counts_what_users_did(
    sqlite_uri: str, experiment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judges put v2-mentor ahead of v1 (production); users do worse with its tips."""
    log_fake_calibration(sqlite_uri, AUTO_JUDGE, "echo")
    store = TrackingStore(sqlite_uri)
    suite = load_suite()
    cells = [
        JudgedCell(MODEL, prompt, s.id, human=uniform(value), auto=uniform(value))
        for prompt, value in (("v1", 9), ("v2-mentor", 13))
        for s in suite.scenarios
    ]
    run_ids = write_cells(store.client, store.experiment_id(experiment, create=True), cells)
    for cell, run_id in zip(cells, run_ids, strict=True):
        store.client.set_tag(run_id, "prompt_hash", suite.prompt(cell.prompt_version).template_hash)
    promote_prompt(MlflowClient(sqlite_uri), "tipbench-tips", suite.prompt("v1"), {})

    monkeypatch.setenv("TIPBENCH_POLICY_STATE_URL", f"sqlite:///{tmp_path / 'none.sqlite'}")
    before = promotion_gate(experiment, sqlite_uri, apply=False)
    assert before["promote"] and "not worse online" not in [c["name"] for c in before["conditions"]]

    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    worse = OnlineWorld(model=MODEL, experiment=experiment,
                        effects={"v1": 0.15, "v2-mentor": -0.15, "v3-few-shot": 0.0})  # fmt: skip
    serve_online_world(state, worse, seed=3, n=2000)
    monkeypatch.setenv("TIPBENCH_POLICY_STATE_URL", state)
    gate = promotion_gate(experiment, sqlite_uri, apply=False)
    online = [c for c in gate["conditions"] if c["name"] == "not worse online"]
    assert not gate["promote"] and len(online) == 1
    assert not online[0]["passed"] and "worse with users" in online[0]["figure"]
    assert gate["decision_run"]  # recorded, as every gate of the DAG is
