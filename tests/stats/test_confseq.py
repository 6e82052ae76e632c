"""Anytime-valid comparisons with the leader (issue 23, items 4 and 5; issue 31).

Their behaviour under peeking, on simulated experiments, is in
`tests/judging/test_simulations.py`. `confseq` (the test-confseq extra, which scripts/test
builds) is imported by the one test that reads it, so that the others run on a plain
`pip install -e .[test]`."""

from __future__ import annotations

import numpy as np
import pytest

from tipbench.stats import (
    MIN_DF,
    normal_mixture_bound,
    sequence_radius,
    small_sample_factor,
)


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.0045])
@pytest.mark.parametrize("v_opt", [3.0, 8.0, 50.0])
def test_the_boundary_is_confseqs_two_sided_normal_mixture(alpha: float, v_opt: float) -> None:
    try:
        from confseq.boundaries import normal_mixture_bound as confseq_bound
    except ImportError as missing:
        pytest.fail(
            f"{missing}: the reference is the test-confseq extra, which scripts/test builds "
            "(pip cannot build confseq 0.0.11 in isolation on Python 3.11)"
        )
    v = np.asarray([0.5, 1.0, 3.0, 8.0, 20.0, 100.0, 1000.0])
    ours = normal_mixture_bound(v, alpha, v_opt)
    theirs = confseq_bound(v, alpha, v_opt, alpha, False)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_the_boundary_by_hand() -> None:
    """ρ = 8 / (2 log 20 + log(1 + 2 log 20)) and u(8) = √((8 + ρ) log((8 + ρ) / (ρ α²)))."""
    rho = 8.0 / (2 * np.log(20.0) + np.log(1 + 2 * np.log(20.0)))
    expected = np.sqrt((8 + rho) * np.log((8 + rho) / (rho * 0.05**2)))
    assert normal_mixture_bound(np.asarray([8.0]), 0.05, 8.0)[0] == pytest.approx(expected)


def test_a_sequence_is_wider_than_the_interval_read_once() -> None:
    # Variance 1 per scenario, 8 scenarios: the 95% interval's half width is 1.96 / √8.
    radius = sequence_radius(np.asarray([1 / 8]), np.asarray([1.0]), 0.05, 8.0)[0]
    assert 1.96 / np.sqrt(8) < radius < 2.5 * 1.96 / np.sqrt(8)


def test_the_allowance_for_few_scores() -> None:
    factors = small_sample_factor(np.asarray([MIN_DF - 1.0, MIN_DF, 10.0, 1e6]), 0.05)
    assert factors[0] == np.inf  # no sequence at all
    assert factors[1] > factors[2] > factors[3] == pytest.approx(1.0, abs=1e-4)


def test_no_spread_seen_is_no_certainty() -> None:
    """A variance of 0 (two identical scores) or NaN gives an infinite radius: inconclusive."""
    radius = sequence_radius(np.asarray([0.0, np.nan, 0.5]), np.asarray([1.0, 1.0, 0.0]), 0.05, 8)
    assert np.all(np.isinf(radius))
