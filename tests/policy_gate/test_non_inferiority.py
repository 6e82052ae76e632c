"""The off-policy condition of the gate, checked as an outsider would, in seeded simulation:
its lower bound of (challenger − live) holds the true difference as a 95% interval should, so
a challenger truly worse by δ or more passes at most about 2.5% of the time; and a challenger
that wins in the simulator but is worse on the served traffic is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.policy_state import serve_world
from tipbench.evaluate import evaluate, traffic_from_rows
from tipbench.policy_gate import OFF_POLICY_MARGIN_REWARD, decide_promotion, promote_policy
from tipbench.policy_service import Roles, decision_rows, open_store
from tipbench.simulate import (
    Contender,
    Served,
    SimulationConfig,
    SimulationReport,
    World,
    make_world,
    serve,
    simulate,
)
from tipbench.simulate._log import log_rows
from tipbench.suite import load_suite

SUITE = load_suite()
assert SUITE.population is not None and SUITE.catalogue is not None
REPETITIONS = 100
SHADOWS = ("egreedy-v2", "linucb")


def served_worlds(seeds: range, users: int, days: int) -> tuple[list[World], Served]:
    """`/serve` traffic of the bundled population: egreedy-v1 live, the others shadows."""
    worlds = [
        make_world(SUITE.population, SUITE.catalogue, seed, users, days)  # type: ignore[arg-type]
        for seed in seeds
    ]
    shadows = [Contender.named(name) for name in SHADOWS]
    categories = len(SUITE.population.categories)  # type: ignore[union-attr]
    return worlds, serve(worlds, Contender.named("egreedy-v1"), shadows, categories)


@pytest.fixture(scope="module")
def simulation() -> SimulationReport:
    """A small study where every shadow was simulated beside the live policy (only the
    off-policy condition is read from the decisions)."""
    config = SimulationConfig(policies=("egreedy-v1", *SHADOWS), seeds=6, days=3, users=8)
    return simulate(config).report


def test_the_lower_bound_holds_the_true_difference(simulation: SimulationReport) -> None:
    """100 worlds of 1,260 served decisions, two shadows each: the interval of (challenger −
    live) covers the true difference (what the shadow would have shown minus what the live
    policy showed, in expected reward, decision by decision) in at least 93% of the 200
    cases (97% here), its lower bound lies above it in at most 5% (2.5% nominal), and of the cases
    truly worse by δ or more the gate passes at most 5%."""
    worlds, served = served_worlds(range(REPETITIONS), 30, 14)
    covered, above, worse, passed_worse = [], [], 0, 0
    for i, world in enumerate(worlds):
        traffic = traffic_from_rows(log_rows(world, served, i, SUITE.catalogue))  # type: ignore[arg-type]
        report = evaluate(traffic, list(SHADOWS))
        live = (served.live.probabilities[i] * world.expected).sum(axis=1)
        for shadow in served.shadows:
            name = shadow.contender.label
            truth = float(((shadow.probabilities[i] * world.expected).sum(axis=1) - live).mean())
            comparison = report.comparison(name)
            assert comparison is not None and comparison.difference is not None
            d = comparison.difference
            covered.append(d.low <= truth <= d.high)
            above.append(d.low > truth)
            if truth <= -OFF_POLICY_MARGIN_REWARD:
                worse += 1
                decision = decide_promotion(name, "egreedy-v1", simulation, report)
                passed_worse += decision.conditions[2].passed
    assert len(covered) == 2 * REPETITIONS
    assert np.mean(covered) >= 0.93, np.mean(covered)
    assert np.mean(above) <= 0.05, np.mean(above)
    assert worse >= 50  # enough truly worse challengers for the rate to say something
    assert passed_worse / worse <= 0.05, (passed_worse, worse)


def test_a_challenger_better_in_the_simulator_but_worse_on_served_traffic_is_refused(
    tmp_path: Path,
) -> None:
    """Production runs linucb with α = 2 as a shadow of egreedy-v1. In the simulator, where
    it decides for itself and learns from its own optimism, it beats egreedy-v1 (p < 0.05).
    As a shadow it learns only from what egreedy-v1 shows, stays optimistic about the
    categories egreedy-v1 rarely shows, and would have shown worse tips: on the served
    traffic (a world played through a real `PolicyService`) it is truly worse by more than δ.
    The gate refuses it; the rule without a margin (refuse only an interval wholly below 0)
    let it through, the interval still reaching above 0."""
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    store = open_store(state)
    try:
        store.update_config(lambda stored: {**stored, "policies": {"linucb": {"alpha": 2.0}}})
    finally:
        store.close()
    world = serve_world(state, Roles("egreedy-v1", ("linucb",)), seed=0)

    result = promote_policy("linucb", state_url=state)

    simulator, off_policy = result.decision.conditions[1:]
    assert simulator.passed, simulator.figure
    assert not result.decision.promote and not off_policy.passed
    store = open_store(state, create=False)
    try:
        traffic = traffic_from_rows(decision_rows(store))
    finally:
        store.close()
    served = (traffic.targets["linucb"] - traffic.logging) * world.expected
    truth = float(served.sum(axis=1).mean())
    assert truth < -OFF_POLICY_MARGIN_REWARD  # truly worse where it would serve
    difference = evaluate(traffic, ["linucb"]).comparison("linucb")
    assert difference is not None and difference.difference is not None
    assert difference.difference.high > 0  # not "significantly worse": the old rule passed it
    assert off_policy.figure.startswith("DR linucb ")
    assert ": cannot rule out a loss of 0.01: " in off_policy.figure
