"""Judging in the order that decides (issue 23, items 3 and 5)."""

from __future__ import annotations

import numpy as np
import pytest

from tipbench.human_tier import Queues, next_units, queue_clocks, queue_inclusion, snapshot
from tipbench_dev.ppi_sim import World, simulate, with_human


def test_a_queue_prefix_and_its_inclusion_probabilities_by_hand() -> None:
    cell = np.asarray([0, 0, 0, 1, 1, 1, 1])
    rates = np.asarray([1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0])
    clocks = np.asarray([0.3, 0.1, 0.2, 0.5, 0.1, 0.9, 0.3])
    scored = np.asarray([False, True, True, True, True, False, False])
    units, pi = queue_inclusion(cell, rates, clocks, scored)
    # Cell 0 (equal rates): its first two of three are scored, 2/3 each. Cell 1: run 4
    # comes first; run 3 was scored out of turn (after run 6, not scored): it waits.
    assert units.tolist() == [1, 2, 4]
    assert pi[:2] == pytest.approx([2 / 3, 2 / 3])
    # Rosén: t with Σ (1 − exp(−r t)) = 1 over rates 1..4; run 4 has rate 2.
    from scipy.optimize import brentq

    t = brentq(lambda t: sum(1 - np.exp(-r * t) for r in (1, 2, 3, 4)) - 1, 1e-9, 10)
    assert pi[2] == pytest.approx(1 - np.exp(-2 * t))


def test_inclusion_probabilities_add_up_to_the_runs_scored() -> None:
    rng = np.random.default_rng(3)
    rates = 1.0 + rng.random(8)
    clocks = queue_clocks(rates, rng)
    cell = np.zeros(8, dtype=np.intp)
    for k in range(1, 8):
        scored = np.zeros(8, dtype=bool)
        scored[np.argsort(clocks)[:k]] = True
        _, pi = queue_inclusion(cell, rates, clocks, scored)
        assert pi.sum() <= k + 1e-9
        assert np.all((pi > 0) & (pi < 1))
    everything = queue_inclusion(cell, rates, clocks, np.ones(8, dtype=bool))[1]
    assert np.all(everything == 1.0)


def test_runs_the_judge_was_unsure_of_tend_to_come_first() -> None:
    rng = np.random.default_rng(1)
    rates = np.repeat([1.0, 2.0], 5000)
    first_half = np.argsort(queue_clocks(rates, rng))[:5000]
    assert np.mean(first_half >= 5000) > 0.6
    with pytest.raises(ValueError, match="positive rate"):
        queue_clocks(np.asarray([1.0, 0.0]), rng)


def test_the_order_gives_every_cell_a_score_then_six_scenarios_then_the_closest_comparison() -> (
    None
):
    """The product's loop on one simulated experiment (4 cells, 8 scenarios × 2 runs): one
    score in every cell first, then scores until every cell's cover 6 scenarios (no
    comparison can settle before), then mostly the leader and its closest rival."""
    experiments = simulate(World(means=(4.6, 4.4, 3.6, 3.4)), 1, seed=4)
    judged = experiments.judged("biased")
    rates = np.ones(len(judged.cell))
    queues = Queues("active", rates, queue_clocks(rates, np.random.default_rng(2)))
    picks = []
    covered_at = None
    for step in range(40):
        now = snapshot(judged, queues, 0.05)
        if covered_at is None and np.all(now.estimates.n_human_scenarios >= 6):
            covered_at = step
        unit = next_units(judged, queues, now)
        picks.append(int(judged.cell[unit[0]]))
        judged = with_human(judged, experiments, unit)
    assert sorted(picks[:4]) == [0, 1, 2, 3]
    assert covered_at is not None and covered_at <= 40
    later = picks[covered_at:]
    assert sum(p in (0, 1) for p in later) >= 0.5 * len(later)
