"""The evaluation reads the service's own decision log: from its JSON-lines export or from
the state store, the same traffic either way; a bad file is refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.policy_logs import HAND_MADE
from support.policy_state import serve_world
from tipbench._errors import ConfigError
from tipbench.evaluate import evaluate, read_log, traffic_from_rows
from tipbench.policy_service import Roles, decision_rows, export_log, open_store


def test_the_exported_log_and_the_store_give_the_same_evaluation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    world = serve_world(url, Roles("egreedy-v1", ("egreedy-v2",)), 1, 12, 4, skip_reward_every=10)
    out = tmp_path / "log.jsonl"
    store = open_store(url, create=False)
    try:
        count = export_log(store, out, "jsonl")
        from_file = traffic_from_rows(read_log(out))
        from_store = traffic_from_rows(decision_rows(store))
    finally:
        store.close()
    assert count == world.steps == from_file.decisions
    assert from_file.n == world.steps - world.steps // 10
    np.testing.assert_array_equal(from_file.reward, from_store.reward)
    np.testing.assert_array_equal(from_file.targets["egreedy-v2"], from_store.targets["egreedy-v2"])
    assert not np.isnan(from_file.x_v2).any()  # the shadow's v2 features were logged
    a = evaluate(from_file, min_decisions=50).to_dict()
    b = evaluate(from_store, min_decisions=50).to_dict()
    assert a == b
    assert a["live"] == "egreedy-v1"
    assert a["policies"][0]["policy"] == "egreedy-v2"
    assert a["observed"][0]["decisions"] == from_file.n


def test_a_bad_log_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--log .*missing\.jsonl: No such file"):
        list(read_log(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"policy": "egreedy-v1"}\n{not json\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.jsonl: line 2: not JSON"):
        list(read_log(bad))
    with pytest.raises(ConfigError, match="decision at row 1: decision_id: null is not a decision"):
        traffic_from_rows([{"policy": "egreedy-v1", "reward": 1.0}])
    with pytest.raises(
        ConfigError, match=r"decision 'x' \(row 1\): candidates: not a non-empty list"
    ):
        traffic_from_rows([{"decision_id": "x", "policy": "egreedy-v1", "reward": 1.0}])
    no_features = {k: v for k, v in HAND_MADE[0].items() if k != "features"}
    with pytest.raises(ConfigError, match=r"decision 'h1' \(row 1\): not a decision-log row"):
        traffic_from_rows([no_features])
    with pytest.raises(ConfigError, match="unknown policy 'greedy'"):
        evaluate(traffic_from_rows([]), ["greedy"])
