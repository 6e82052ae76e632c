"""In simulation, each estimator's 95% interval covers the policy's true value in at least 93%
of 100 seeded repetitions (96–100% here): for shadows (logged probabilities) and a replayed
policy; the log read in chunks gives the same figures as read whole."""

from __future__ import annotations

import numpy as np
import pytest

from tipbench.evaluate import ESTIMATORS, evaluate, replay, traffic_from_rows
from tipbench.simulate import Contender, make_world, serve
from tipbench.simulate._log import log_rows
from tipbench.suite import load_suite

SUITE = load_suite()
assert SUITE.population is not None and SUITE.catalogue is not None
REPETITIONS = 100


@pytest.fixture(scope="module")
def simulated() -> tuple[list, object]:
    worlds = [
        make_world(SUITE.population, SUITE.catalogue, seed, 30, 14)  # type: ignore[arg-type]
        for seed in range(REPETITIONS)
    ]
    live = Contender.named("egreedy-v1")
    shadows = [Contender.named("egreedy-v2"), Contender.named("linucb")]
    return worlds, serve(worlds, live, shadows, len(SUITE.population.categories))  # type: ignore[union-attr]


def test_intervals_cover_the_true_value(simulated: tuple[list, object]) -> None:
    worlds, served = simulated
    covered: dict[tuple[str, str], list[bool]] = {}
    for i, world in enumerate(worlds):
        traffic = traffic_from_rows(log_rows(world, served, i, SUITE.catalogue))  # type: ignore[arg-type]
        assert traffic.n == world.steps
        report = evaluate(traffic, ["egreedy-v2", "linucb", "egreedy-v1"])
        targets = {s.contender.label: s.probabilities[i] for s in served.shadows}  # type: ignore[attr-defined]
        targets["egreedy-v1"] = served.live.probabilities[i]  # type: ignore[attr-defined]
        for name, probabilities in targets.items():
            truth = float((probabilities * world.expected).sum(axis=1).mean())
            evaluation = report.policy(name)
            assert evaluation.status == "estimated"
            for estimator in ESTIMATORS:
                e = evaluation.estimates[estimator]
                covered.setdefault((name, estimator), []).append(e.low <= truth <= e.high)
    rates = {key: float(np.mean(hits)) for key, hits in covered.items()}
    assert len(rates) == 9
    assert all(len(hits) == REPETITIONS for hits in covered.values())
    assert min(rates.values()) >= 0.93, rates


def test_a_replayed_policy_gets_the_probabilities_it_would_have_logged(
    simulated: tuple[list, object],
) -> None:
    """egreedy-v2 replayed on the log learns as its shadow did: the same probabilities."""
    worlds, served = simulated
    traffic = traffic_from_rows(log_rows(worlds[0], served, 0, SUITE.catalogue))  # type: ignore[arg-type]
    logged = traffic.targets["egreedy-v2"]
    np.testing.assert_allclose(replay(traffic, "egreedy-v2"), logged, atol=1e-12)
    without = traffic_from_rows(
        {**r, "shadows": [s for s in r["shadows"] if s["policy"] != "egreedy-v2"]}
        for r in log_rows(worlds[0], served, 0, SUITE.catalogue)  # type: ignore[arg-type]
    )
    evaluation = evaluate(without, ["egreedy-v2"]).policy("egreedy-v2")
    assert evaluation.source == "replayed" and evaluation.status == "estimated"
    assert evaluation.estimates["dr"].value == pytest.approx(
        evaluate(traffic, ["egreedy-v2"]).policy("egreedy-v2").estimates["dr"].value
    )
