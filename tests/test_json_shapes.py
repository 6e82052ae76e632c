"""One interval type and one gate shape (issue 48, item 3).

Every interval a result writes to JSON, in both loops, is `stats.Estimate`'s object with
the same keys: a leaderboard row's mean, its comparison with the leader and that
comparison's confidence sequence, the combined tier's sequences, the leader's sequences,
the promotion gate's gains over production, a simulation's figures and its paired
comparisons, an off-policy evaluation's estimates. Both promotion gates write their verdict
the same way, through one serialiser (`stats.gate_fields`): ``"promote"`` and
``"conditions"``, each ``{"name", "passed", "figure"}``. The documents are the products'
own, built from runs in memory, a real simulation and a decision log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from support.judged_runs import uniform
from support.online_worlds import OnlineWorld
from support.policy_logs import row
from tipbench.auto_judge import JudgeCalibration
from tipbench.compare import (
    Leaderboard,
    build_leaderboard,
    combined_board,
    combined_versus,
    leaderboard_document,
)
from tipbench.evaluate import evaluate, traffic_from_rows
from tipbench.human_tier import JudgingOrder, combined_state
from tipbench.online import online_document, online_tier
from tipbench.policy_gate import decide_promotion
from tipbench.promote import ProductionPrompt, decide
from tipbench.promote._combined_gate import CombinedEvidence
from tipbench.simulate import SimulationConfig, simulate
from tipbench.stats import Estimate, gate_fields
from tipbench.suite import load_suite
from tipbench.tracking import CellRun, run_metrics

ESTIMATE_KEYS = {"value", "low", "high", "method", "se", "n", "confidence"}
CONDITION_KEYS = {"name", "passed", "figure"}
GONE = {"ci_low", "ci_high", "ci_method", "cs_low", "cs_high", "diff", "mean_diff", "checks"}
"""The keys the two shapes replaced: none is left in any document."""

MODEL = "ollama:qwen2.5:1.5b"
SCENARIOS = [s.id for s in load_suite().scenarios]  # 8
HUMAN = {"v1": [9, 10, 9, 11, 10, 9, 10, 9], "v2-mentor": [14, 15, 13, 15, 14, 16, 15, 14]}


def _objects(document: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a JSON document with its path; a mean's `scale` is a range of the
    rubric, not an interval, and is left out."""
    if isinstance(document, dict):
        yield path, document
        for key, value in document.items():
            if key != "scale":
                yield from _objects(value, f"{path}.{key}")
    elif isinstance(document, list):
        for i, value in enumerate(document):
            yield from _objects(value, f"{path}[{i}]")


def intervals(document: Any) -> dict[str, dict[str, Any]]:
    """Every object holding an interval's end, by path."""
    return {path: o for path, o in _objects(document) if {"low", "high"} & set(o)}


def _keys(document: Any) -> set[str]:
    return {key for _, found in _objects(document) for key in found}


@pytest.fixture(scope="module")
def bench() -> tuple[Leaderboard, Leaderboard, Leaderboard, CombinedEvidence]:
    """Two prompts on 8 scenarios, both tiers on every run, drawn in a judging order: the
    human, automatic and combined leaderboards, and the combined tier's evidence."""
    runs = [
        CellRun(MODEL, prompt, scenario, run_id=f"{prompt}-{i}",
                metrics=run_metrics("human", uniform(values[i]))
                | run_metrics("auto", uniform(values[i] - 1)))
        for prompt, values in HUMAN.items()
        for i, scenario in enumerate(SCENARIOS)
    ]  # fmt: skip
    judge = dict.fromkeys(("relevance", "actionability", "tone", "format_ok", "overlong"), 0.9)
    calibrated = JudgeCalibration("ollama:qwen2.5:3b", "tip-v1", 0.6, judge, answered=35, tips=35)
    human = build_leaderboard(runs, "human")
    auto = replace(build_leaderboard(runs, "auto"), calibration=(calibrated,))
    state = combined_state(runs, JudgingOrder("uniform", 1, "2026-11-28T00:00:00+00:00"))
    combined = combined_board(state, 3, "x")
    return human, auto, combined, CombinedEvidence(combined, partial(combined_versus, state))


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    """A small simulation of two policies, the policy gate's decision on it and a log where
    the challenger would win, and the online tier of a seeded world's decision log."""
    config = SimulationConfig(policies=("egreedy-v1", "egreedy-v2"), seeds=6, days=3, users=10)
    report = simulate(config).report
    log = [row((0.5, 0.5), i % 2, 1.0 if i % 2 == 0 else 0.0, (0.9, 0.1)) for i in range(400)]
    evaluation = evaluate(traffic_from_rows(log), ["egreedy-v2"])
    decision = decide_promotion("egreedy-v2", "egreedy-v1", report, evaluation)
    assert gate_fields(decision.conditions).items() <= decision.to_dict().items()
    online = online_document(online_tier(OnlineWorld().log(8, 2000)), [])
    return {"report": report.to_dict(), "gate": decision.to_dict(), "online": online}


def test_every_interval_of_the_bench_is_an_estimate(bench: Any) -> None:
    human, auto, combined, _ = bench
    document = [leaderboard_document(board) for board in (human, auto, combined)]
    found = intervals(json.loads(json.dumps(document)))
    assert {path: set(o) for path, o in found.items() if set(o) != ESTIMATE_KEYS} == {}
    kinds = {path.rsplit(".", 1)[-1] for path in found}
    assert {"interval", "difference", "sequence"} <= kinds
    sequences = [o for path, o in found.items() if path.endswith("sequence")]
    assert sequences and {o["method"] for o in sequences} == {"sequence"}
    leader = [o for path, o in found.items() if ".anytime.sequences." in path]
    assert leader and all(o["method"] == "sequence" for o in leader)
    assert GONE & _keys(document) == set()


def test_both_gates_write_the_same_shape_and_their_gains_as_estimates(
    bench: Any, policy: dict[str, Any]
) -> None:
    human, auto, _, combined = bench
    production = ProductionPrompt("tipbench-tips", 1, "v1", "a-template-hash")
    by_tiers = decide(human, auto, production)
    by_combined = decide(human, auto, production, combined=combined)
    assert by_combined.decided_by == "combined" and by_tiers.decided_by == "both"
    gates = [by_tiers.to_dict(), by_combined.to_dict(), policy["gate"]]
    for gate in gates:
        assert isinstance(gate["promote"], bool) and gate["conditions"]
        assert all(set(c) == CONDITION_KEYS for c in gate["conditions"])
    assert gates[0]["promote"] and gates[1]["promote"]  # v2-mentor beats v1 in both ways
    found = intervals(json.loads(json.dumps([*gates, policy["report"], policy["online"]])))
    assert {path: set(o) for path, o in found.items() if set(o) != ESTIMATE_KEYS} == {}
    gains = [gates[0]["evidence"]["vs_production"]["human"],
             gates[1]["evidence"]["vs_production"]["combined"]]  # fmt: skip
    assert all(gain["difference"]["value"] > 0 for gain in gains)
    assert all(gain["sequence"]["method"] == "sequence" for gain in gains)
    assert policy["gate"]["evidence"]["simulation"]["vs_live"]["difference"]["n"] == 6
    assert any(path.startswith("[4]") for path in found)  # the online tier's intervals
    assert GONE & _keys([*gates, policy["report"], policy["online"]]) == set()


def test_an_estimate_is_the_one_interval_json_holds() -> None:
    """The keys every test above expects are `Estimate.to_dict`'s own."""
    assert set(Estimate(1.0, 0.5, 1.5, "sign-flip", n=6).to_dict()) == ESTIMATE_KEYS
