"""Confidence sequences up to the experiment's horizon (issue 43, item 2).

Their behaviour in the product's judging loop, under peeking, is in
`tests/human_tier/test_simulations.py`; here the boundary itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from tipbench.stats import MIN_DF, horizon_boundary, sequence_radius, small_sample_factor
from tipbench.stats._confseq import SLOPE


@pytest.mark.parametrize("alpha", [0.05 / 3, 0.05 / 11, 0.025])
def test_the_boundary_solves_the_first_passage_of_its_line(alpha: float) -> None:
    """Φ(−c) + exp(2κ(c + κ)) Φ(−c − 2κ) = α, worked with scipy's normal."""
    c = float(horizon_boundary(alpha))
    k = SLOPE
    assert norm.sf(c) + math.exp(2 * k * (c + k)) * norm.sf(c + 2 * k) == pytest.approx(alpha)
    # Between one look at the horizon and a flat boundary watched all the way.
    assert norm.isf(alpha) < c < norm.isf(alpha / 2)


def test_a_random_walk_watched_at_every_step_crosses_it_at_most_alpha_of_the_time() -> None:
    """20,000 Gaussian walks of 400 steps to the horizon, each read after every step: the
    share that ever crosses c + κ(1 − τ) is at most α (a walk read in steps crosses a little
    less often than the continuous motion), and not far below it."""
    alpha = 0.05 / 3
    rng = np.random.default_rng(43)
    steps = 400
    tau = np.arange(1, steps + 1) / steps
    walks = np.cumsum(rng.normal(0.0, math.sqrt(1 / steps), (20_000, steps)), axis=1)
    boundary = float(horizon_boundary(alpha)) + SLOPE * (1 - tau)
    crossed = (walks >= boundary).any(axis=1).mean()
    assert 0.7 * alpha < crossed <= alpha


def test_at_the_horizon_the_radius_is_c_standard_errors_and_wider_before() -> None:
    """Variance 1/8 at the horizon: read there, c/√8; with half the information in hand
    (variance 1/4), (c + κ/2) · (1/4) / √(1/8)."""
    alpha = 0.05 / 3
    c = float(horizon_boundary(alpha))
    horizon = np.asarray([1 / 8, 1 / 8])
    radius = sequence_radius(np.asarray([1 / 8, 1 / 4]), horizon, alpha)
    assert radius[0] == pytest.approx(c / math.sqrt(8))
    assert radius[1] == pytest.approx((c + SLOPE / 2) * 0.25 / math.sqrt(1 / 8))


def test_a_variance_below_the_horizons_counts_as_the_horizon_reached() -> None:
    radius = sequence_radius(np.asarray([0.1]), np.asarray([0.2]), 0.05)
    assert radius[0] == pytest.approx(float(horizon_boundary(0.05)) * math.sqrt(0.1))


def test_the_allowance_for_few_scores() -> None:
    factors = small_sample_factor(np.asarray([MIN_DF - 1.0, MIN_DF, 10.0, 1e6]), 0.05)
    assert factors[0] == np.inf  # no sequence at all
    assert factors[1] > factors[2] > factors[3] == pytest.approx(1.0, abs=1e-4)


def test_no_spread_seen_is_no_certainty() -> None:
    """A variance of 0 (two identical scores) or NaN gives an infinite radius: inconclusive."""
    radius = sequence_radius(np.asarray([0.0, np.nan, 0.5]), np.asarray([1.0, 1.0, 0.0]), 0.05)
    assert np.all(np.isinf(radius))


def test_a_level_outside_zero_and_one_is_refused() -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        horizon_boundary(np.asarray([0.0]))
