"""The promotion rule: every condition with its figure, from a real simulation and logs."""

from __future__ import annotations

import pytest

from support.policy_logs import row
from tipbench.evaluate import evaluate, traffic_from_rows
from tipbench.policy_gate import OFF_POLICY_MARGIN_REWARD, decide_promotion, more_decisions
from tipbench.simulate import SimulationConfig, SimulationReport, render_report, simulate


@pytest.fixture(scope="module")
def simulation() -> SimulationReport:
    return simulate(SimulationConfig(policies=("egreedy-v1", "egreedy-v2"))).report


def log(target: tuple[float, float], n: int = 400) -> list[dict[str, object]]:
    """egreedy-v1 shows either tip at random; the focus tip always earns 1, break 0."""
    return [row((0.5, 0.5), i % 2, 1.0 if i % 2 == 0 else 0.0, target) for i in range(n)]


def test_a_challenger_that_wins_everywhere_is_promoted(simulation: SimulationReport) -> None:
    evaluation = evaluate(traffic_from_rows(log((0.9, 0.1))), ["egreedy-v2"])
    decision = decide_promotion("egreedy-v2", "egreedy-v1", simulation, evaluation)
    assert decision.promote
    names = [c.name for c in decision.conditions]
    assert names == ["not live already", "beats live in the simulator", "not worse off-policy"]
    simulator = decision.conditions[1].figure
    assert simulator.startswith("egreedy-v2 − egreedy-v1 = +0.0")
    assert "over 20 seeds; margin 0.005" in simulator
    off_policy = decision.conditions[2].figure
    assert off_policy.startswith("DR egreedy-v2 0.9")
    assert "vs observed egreedy-v1 0.5000 over 400 decisions" in off_policy
    assert off_policy.endswith("over 400 decisions: a loss of 0.01 ruled out (lower bound > −0.01)")
    evidence = decision.to_dict()["evidence"]
    assert evidence["simulation"]["vs_live"]["n_pairs"] == 20
    assert evidence["off_policy_margin"] == OFF_POLICY_MARGIN_REWARD == 0.01


def test_worse_by_more_than_the_margin_refuses(simulation: SimulationReport) -> None:
    evaluation = evaluate(traffic_from_rows(log((0.1, 0.9))), ["egreedy-v2"])
    decision = decide_promotion("egreedy-v2", "egreedy-v1", simulation, evaluation)
    assert not decision.promote
    off_policy = decision.conditions[2]
    assert not off_policy.passed
    assert off_policy.figure.endswith(": worse than egreedy-v1 by more than 0.01")


def test_an_interval_that_holds_minus_delta_asks_for_more_traffic(
    simulation: SimulationReport,
) -> None:
    """Shadow and live policy alike (a true difference of 0): 400 decisions leave a loss of
    0.01 possible, and the gate says about how many more give an 80% chance of settling it;
    a log a fifth longer than that does (it is an estimate: the difference moves as
    decisions come)."""
    evaluation = evaluate(traffic_from_rows(log((0.5, 0.5))), ["egreedy-v2"])
    decision = decide_promotion("egreedy-v2", "egreedy-v1", simulation, evaluation)
    off_policy = decision.conditions[2]
    assert not decision.promote and not off_policy.passed
    comparison = evaluation.comparison("egreedy-v2")
    assert comparison is not None and comparison.difference is not None
    assert comparison.difference.low < -0.01 < comparison.difference.high
    more = more_decisions(comparison, OFF_POLICY_MARGIN_REWARD)
    # ((1.96 + 0.84) · 0.5 / 0.01)² − 400 ≈ 19,200: the terms' sd is 0.5, the difference 0
    assert more is not None and 17_000 < more < 21_000
    assert off_policy.figure.endswith(
        f": cannot rule out a loss of 0.01: about {more:,} more shadow decisions to rule it out "
        "with 80% power (if the difference stays where it is)"
    )
    longer = evaluate(traffic_from_rows(log((0.5, 0.5), n=400 + more * 6 // 5)), ["egreedy-v2"])
    settled = decide_promotion("egreedy-v2", "egreedy-v1", simulation, longer)
    assert settled.conditions[2].passed, settled.conditions[2].figure
    # a wider margin is settable: with δ = 0.1 the 400 decisions suffice
    wide = decide_promotion(
        "egreedy-v2", "egreedy-v1", simulation, evaluation, off_policy_margin=0.1
    )
    assert wide.promote and wide.conditions[2].figure.endswith("ruled out (lower bound > −0.1)")


def test_thin_traffic_refuses_asking_for_more(simulation: SimulationReport) -> None:
    """A noisier, thinner log is no easier to pass: 20 decisions refuse, as 400 alike do."""
    small = evaluate(traffic_from_rows(log((0.9, 0.1), n=20)), ["egreedy-v2"])
    decision = decide_promotion("egreedy-v2", "egreedy-v1", simulation, small)
    assert not decision.promote
    assert decision.conditions[2].figure == (
        "not enough traffic: too little data in the log (20 rewarded decisions with its "
        "probabilities; 100 needed): cannot rule out a loss of 0.01: about 80 more shadow "
        "decisions expected before an estimate"
    )
    rare = [row((0.99, 0.01), 0, 1.0, (0.0, 1.0)) for _ in range(150)]
    rare += [row((0.99, 0.01), 1, 1.0, (0.0, 1.0))]
    weak = evaluate(traffic_from_rows(rare), ["egreedy-v2"])
    figure = decide_promotion("egreedy-v2", "egreedy-v1", simulation, weak).conditions[2]
    assert not figure.passed and "effective sample size 1.0 below 30" in figure.figure
    expected = f"about {151 * 30 - 151:,} more shadow decisions expected before an estimate"
    assert figure.figure.endswith(expected)


def test_without_an_estimate_the_gate_refuses(simulation: SimulationReport) -> None:
    """No traffic is not evidence: condition 3 never leaves the simulator to decide alone."""
    none = decide_promotion("egreedy-v2", "egreedy-v1", simulation, None)
    assert not none.promote and none.conditions[1].passed
    assert none.conditions[2].figure == (
        "not enough traffic: the decision log holds no rewarded decision: cannot rule out a "
        "loss of 0.01: about 100 more shadow decisions expected before an estimate"
    )
    # a v2 challenger the log cannot replay: no decision carries v2 features
    v1_only = [{**r, "shadows": []} for r in log((0.5, 0.5))]
    unseen = evaluate(traffic_from_rows(v1_only), ["egreedy-v2"])
    refused = decide_promotion("egreedy-v2", "egreedy-v1", simulation, unseen).conditions[2]
    assert not refused.passed and refused.figure.startswith(
        "not enough traffic: too little data in the log (cannot replay egreedy-v2: 400 "
        "rewarded decisions have no v2 features logged"
    )
    assert refused.figure.endswith("run egreedy-v2 as a shadow to log its probabilities")
    # probability on a tip the live policy never shows: the log cannot tell its worth
    never = [row((1.0, 0.0), 0, 1.0, (0.5, 0.5)) for _ in range(200)]
    blind = evaluate(traffic_from_rows(never), ["egreedy-v2"])
    figure = decide_promotion("egreedy-v2", "egreedy-v1", simulation, blind).conditions[2]
    assert not figure.passed and figure.figure.startswith("no overlap in the log (50.0% of its")
    assert figure.figure.endswith("more of this traffic would not tell what those tips earn")


def test_too_few_seeds_say_so_instead_of_nan() -> None:
    """With 2 seeds no 95% interval exists (6 are needed): `[+nan, +nan]` was printed, and
    the mean reward showed a bootstrap interval from the 2 seeds."""
    small = simulate(SimulationConfig(policies=("egreedy-v1", "egreedy-v2"), seeds=2, days=2))
    decision = decide_promotion("egreedy-v2", "egreedy-v1", small.report, None)
    figure = decision.conditions[1].figure
    assert "(no 95% interval from 2 seeds: 6 needed), p = " in figure and "nan" not in figure
    lines = render_report(small.report, "header")
    versus = next(line for line in lines if line.startswith("egreedy-v2 "))
    assert "(no 95% interval from 2 seeds: 6 needed) p = " in versus and "nan" not in versus
    # nor does the mean reward have one (a bootstrap of 2 seeds is their range)
    assert versus.split()[1:3] == [
        f"{small.report.policy('egreedy-v2').overall['reward'].value:.4f}",
        "(no",
    ]
    assert "[" not in versus.split("(no interval)")[0]
    oracle = next(line for line in lines if line.startswith("oracle "))
    assert "(no interval)" in oracle


def test_the_margin_and_the_live_policy(simulation: SimulationReport) -> None:
    high = decide_promotion("egreedy-v2", "egreedy-v1", simulation, None, margin=0.5)
    assert not high.promote and high.conditions[1].figure.endswith("(below the margin)")
    again = decide_promotion("egreedy-v1", "egreedy-v1", simulation, None)
    assert not again.promote
    assert [vars(c) for c in again.conditions] == [
        {"name": "not live already", "passed": False, "figure": "egreedy-v1 is the live policy"}
    ]
