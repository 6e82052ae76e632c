"""Sim A/B (issue 49, item 4): the simulated users served the bench's judged tips, an arm per
(model, prompt), respond to each tip's quality (its judged composite, by the stated
`QUALITY_LOGIT`); every arm plays the same worlds, so arms are paired by seed; and
`tipbench policy simulate --tips-from EXPERIMENT` reads the tips from a real MLflow store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from support.cli import assert_one_line_error, tipbench
from support.judged_runs import JudgedCell, uniform, write_cells
from tipbench._errors import ConfigError
from tipbench.simulate import (
    QUALITY_LOGIT,
    BenchTip,
    SimulationConfig,
    TipPool,
    bench_tips,
    sim_ab,
)
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

SMALL = SimulationConfig(seeds=8, days=5, users=12)
MODEL = "ollama:qwen2.5:1.5b"


def pool(prompt: str, composites: list[float], model: str = "m") -> TipPool:
    return TipPool(
        model,
        prompt,
        tuple(BenchTip(f"run-{prompt}", f"c{i}", c) for i, c in enumerate(composites)),
    )


def test_better_judged_tips_earn_more_paired_by_seed() -> None:
    pools = [pool("v1", [8, 9, 10]), pool("v2-mentor", [13, 14, 15]), pool("v3-few-shot", [11])]
    ab = sim_ab(SMALL, pools, baseline="v1")
    report = ab.report
    assert report.live == "m|v1" and ab.reference == pytest.approx(
        np.mean([8, 9, 10, 13, 14, 15, 11])
    )
    rewards = {p.policy: p.overall["reward"] for p in report.policies}
    assert rewards["m|v2-mentor"].value > rewards["m|v3-few-shot"].value > rewards["m|v1"].value
    for name in ("m|v2-mentor", "m|v3-few-shot"):
        vs = report.policy(name).vs_live
        assert vs is not None and vs.n_pairs == 8 and vs.difference.low > 0  # every seed paired
        assert rewards[name].has_interval
    again = sim_ab(SMALL, pools, baseline="v1")  # seeded: the same report
    assert again.report.to_dict() == report.to_dict()


def test_arms_of_equal_quality_see_the_same_worlds() -> None:
    """Common random numbers: two arms whose tips are judged alike earn the same reward in
    every seed, to the last digit, however their pools differ in size."""
    ab = sim_ab(SMALL, [pool("v1", [11, 11]), pool("v2-mentor", [11, 11, 11, 11, 11])])
    first, second = ab.report.policies
    assert first.per_seed == second.per_seed
    assert second.vs_live is not None and second.vs_live.difference.value == 0.0


def test_the_quality_effect_is_as_stated() -> None:
    """One arm of tips 4 points above the rest: its completion odds rise by e^(4·0.15) on a
    world of the same users, moments and random numbers (its completion rate is higher in
    every seed)."""
    assert QUALITY_LOGIT == 0.15
    ab = sim_ab(SMALL, [pool("v1", [10]), pool("v2-mentor", [14])], baseline="v1")
    low, high = (
        [o.overall.completion for o in ab.outcomes if o.policy == name]
        for name in ("m|v1", "m|v2-mentor")
    )
    assert all(h >= lo for h, lo in zip(high, low, strict=True)) and sum(high) > sum(low)


def test_bad_baseline_and_empty_pools() -> None:
    with pytest.raises(ConfigError, match="--baseline 'v9' is not a judged source"):
        sim_ab(SMALL, [pool("v1", [10])], baseline="v9")
    with pytest.raises(ConfigError, match="at least one source"):
        sim_ab(SMALL, [])


def test_tips_from_a_real_experiment(sqlite_uri: str, experiment: str) -> None:
    """Judged cells in MLflow: their tips become the arms (human scores where given); the CLI
    reports each prompt version, records the A/B, and refuses bad input in one line."""
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    scenarios = [s.id for s in load_suite().scenarios][:3]
    cells = [
        JudgedCell(MODEL, prompt, scenario, human=uniform(value), auto=uniform(value - 1))
        for prompt, value in (("v1", 8), ("v2-mentor", 15))
        for scenario in scenarios
    ]
    write_cells(store.client, experiment_id, cells)
    pools = bench_tips(store, experiment)
    assert [p.prompt_version for p in pools] == ["v1", "v2-mentor"]
    assert [len(p.tips) for p in pools] == [6, 6]  # 3 runs × 2 candidates
    assert [p.mean_composite for p in pools] == [8.0, 15.0]  # the human's, not the judge's

    size = ("--seeds", "6", "--days", "3", "--users", "6")
    base = ("policy", "simulate", "--tips-from", experiment, "--tracking-uri", sqlite_uri,
            *size, "--experiment", f"{experiment}-sim")  # fmt: skip
    result = tipbench(*base, "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    arms = {p["policy"]: p for p in document["policies"]}
    better = arms[f"{MODEL}|v2-mentor"]
    difference = better["vs_live"]["difference"]
    assert difference["value"] > 0 and difference["low"] > 0
    assert document["live"] == f"{MODEL}|v1" and document["run_id"]
    text = tipbench(*base, "--baseline", "v2-mentor")
    assert text.returncode == 0, text.stderr
    assert "vs baseline (paired by seed)" in text.stdout and "0.15 log-odds" in text.stdout

    assert_one_line_error(tipbench(*base[:-2], "--experiment", "x", "--url", "http://127.0.0.1:9"),
                          "drop --url")  # fmt: skip
    missing = ("policy", "simulate", "--tips-from", "no-such-bench", "--tracking-uri", sqlite_uri)
    assert_one_line_error(tipbench(*missing), "no experiment 'no-such-bench'")
    alone = tipbench("policy", "simulate", "--baseline", "v1", "--tracking-uri", sqlite_uri)
    assert_one_line_error(alone, "goes with --tips-from")
