"""Seeded simulations of the product's judging loop (issue 31, item 7).

Each drives the functions the judging page, `judge export`, `compare` and `promote` run
(`judging.snapshot`, `next_units`, `estimate`, `decide_leader`, `human_decision`) on
300 simulated experiments at once (`tipbench_dev.ppi_sim`): integer 1–5 criteria with a
ceiling, heteroscedastic run noise, two runs per scenario (six in the coverage test), and
four judges of our own design (one biased for one model's cells only, one anti-correlated
with the human inside a leading cell, a generous integer judge at the ceiling, noise).
The figures are in docs/statistics.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from tipbench.stats import differences, estimate, half_width
from tipbench_dev.ppi_sim import JUDGES, World, order_sample, race, simulate, with_human

N = 300
ALPHA = 0.05
TIED = World(means=(4.3, 4.3, 4.0, 3.8))
"""Two cells truly equal at the top, on different models: any promotion is false."""
CLEAR = World(means=(4.6, 4.0, 3.8, 3.6))
"""One cell truly best: naming another is false."""


@pytest.fixture(scope="module")
def six_runs() -> object:
    return simulate(World(runs=6), N, seed=31)


@pytest.mark.parametrize("judge", JUDGES)
def test_intervals_cover_means_and_differences_and_never_widen(six_runs, judge: str) -> None:
    """3, 6 and 10 human labels per cell, drawn in queues whose rates (the judge's reported
    difficulty, from 1 to 50) give some runs an inclusion probability below 0.02: the 95%
    intervals of the cell means and of every difference between cells cover the truth in
    at least 93% of cells, and the combined interval is never wider than the human
    scores' alone."""
    experiments = six_runs
    rates = 1.0 + 49.0 * experiments.difficulty.reshape(-1) ** 3
    truth = np.tile(experiments.truth, N)
    c = experiments.world.n_cells
    first, second = np.triu_indices(c, 1)
    a = (np.arange(N)[:, None] * c + first).reshape(-1)
    b = (np.arange(N)[:, None] * c + second).reshape(-1)
    for k in (3, 6, 10):
        sample = order_sample(experiments, k, rates, seed=k)
        assert sample.inclusion.min() < 0.02
        judged = with_human(experiments.judged(judge), experiments, sample.unit)
        combined = estimate(judged, sample)
        alone = estimate(judged, sample, use_judge=False)
        width = half_width(combined.variance, combined.df, 0.95)
        assert np.isfinite(width).all()
        assert np.mean(np.abs(combined.mean - truth) <= width) >= 0.93
        assert np.all(width <= half_width(alone.variance, alone.df, 0.95) * (1 + 1e-9))
        pair = differences(judged, sample, combined, a, b)
        spread = half_width(pair.variance, pair.df, 0.95)
        assert np.mean(np.abs(pair.mean - (truth[b] - truth[a])) <= spread) >= 0.93


@pytest.fixture(scope="module")
def tied() -> object:
    return simulate(TIED, N, seed=7)


@pytest.mark.parametrize("kind", ["uniform", "active"])
@pytest.mark.parametrize("judge", JUDGES)
def test_the_gate_asked_after_every_label_rarely_promotes_one_of_two_equal_cells(
    tied, judge: str, kind: str
) -> None:
    """The combined tier's gate read after every human label, until every run is judged:
    with the two top cells equal, it finds a leader decided (and would promote) in at most
    α = 5% of 300 experiments."""
    result = race(tied, judge, kind, seed=11)  # type: ignore[arg-type]
    assert result.wrong(frozenset()).mean() <= ALPHA


def test_the_human_tiers_gate_asked_after_every_label_rarely_promotes_either() -> None:
    """The gate's path without a judging order: the human tier's sequences, read after
    every label (labels in a random order), with the two top cells equal."""
    result = race(simulate(TIED, N, seed=8), "useless", "uniform", tier="human", seed=12)
    assert result.wrong(frozenset()).mean() <= ALPHA


@pytest.mark.parametrize("tier", ["combined", "human"])
def test_with_one_best_cell_the_gate_names_no_other(tier: str) -> None:
    """One cell truly best by 1.5 composite points: read after every label, the gate names
    another cell in at most α of the experiments, and does name the best in some."""
    experiments = simulate(CLEAR, N, seed=9)
    kind = "active" if tier == "combined" else "uniform"
    result = race(experiments, "biased", kind, tier=tier, seed=13)  # type: ignore[arg-type]
    assert result.wrong(frozenset({0})).mean() <= ALPHA
    assert result.decided().mean() > 0.0
