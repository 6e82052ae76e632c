"""Intervals and paired sign-flip comparisons, checked by hand, against scipy, and by seeded
simulations of their coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tipbench.stats import (
    EXACT_MAX_PAIRS,
    Estimate,
    PairedComparison,
    bootstrap_mean_ci,
    mean_interval,
    min_attainable_p,
    paired_comparison,
    pairs_needed,
    sign_flip_interval,
    tied,
    verdict,
)


def _sample(n: int, seed: int = 1) -> list[float]:
    return [float(v) for v in np.random.default_rng(seed).normal(10.0, 2.0, size=n)]


def test_interval_contains_the_mean() -> None:
    values = _sample(40)
    mean, low, high = bootstrap_mean_ci(values)
    assert mean == pytest.approx(float(np.mean(values)))
    assert low < mean < high


def test_interval_narrows_with_more_data() -> None:
    _, low_small, high_small = bootstrap_mean_ci(_sample(10))
    _, low_large, high_large = bootstrap_mean_ci(_sample(1000))
    assert high_large - low_large < (high_small - low_small) / 3


def test_interval_is_close_to_the_normal_approximation() -> None:
    values = _sample(400)
    _, low, high = bootstrap_mean_ci(values)
    half_width = 1.96 * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    assert high - low == pytest.approx(2 * half_width, rel=0.1)


def test_higher_confidence_gives_a_wider_interval() -> None:
    values = _sample(30)
    _, low_90, high_90 = bootstrap_mean_ci(values, confidence=0.90)
    _, low_99, high_99 = bootstrap_mean_ci(values, confidence=0.99)
    assert low_99 < low_90 and high_90 < high_99


def test_bootstrap_is_deterministic_with_its_seed() -> None:
    values = _sample(25)
    assert bootstrap_mean_ci(values, seed=7) == bootstrap_mean_ci(values, seed=7)
    assert bootstrap_mean_ci(values, seed=7) != bootstrap_mean_ci(values, seed=8)


def test_bootstrap_edge_cases() -> None:
    assert all(math.isnan(v) for v in bootstrap_mean_ci([]))
    assert bootstrap_mean_ci([4.5]) == (4.5, 4.5, 4.5)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean_ci([1.0, math.nan])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean_ci([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_mean_ci([1.0, 2.0], n_resamples=0)


def test_exact_p_value_when_every_difference_is_positive() -> None:
    leader = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    other = {"a": 2.0, "b": 2.5, "c": 5.0, "d": 4.25}
    result = paired_comparison(leader, other)
    # Of the 16 sign flips only "all +" and "all -" reach |sum| >= the observed one.
    assert result.exact
    assert result.p_value == pytest.approx(2 / 16)
    assert result.n_pairs == 4
    assert result.difference.value == pytest.approx((1.0 + 0.5 + 2.0 + 0.25) / 4)


def test_exact_p_value_counts_ties_of_the_flipped_sums() -> None:
    # diffs 2, 1, -1: flipped sums 4, 2, 2, 0, 0, -2, -2, -4 -> |sum| >= 2 in 6 of 8.
    result = paired_comparison({"a": 0.0, "b": 0.0, "c": 0.0}, {"a": 2.0, "b": 1.0, "c": -1.0})
    assert result.p_value == pytest.approx(6 / 8)


def test_exact_p_value_is_not_disturbed_by_rounding() -> None:
    # In tenths the flipped sums that tie with the observed one differ from it by rounding.
    whole = [1, 2, -3, 3, 4, -1, 2]
    zeros = {f"s{i}": 0.0 for i in range(len(whole))}
    in_units = paired_comparison(zeros, {f"s{i}": float(d) for i, d in enumerate(whole)})
    in_tenths = paired_comparison(zeros, {f"s{i}": d / 10 for i, d in enumerate(whole)})
    assert in_tenths.p_value == in_units.p_value


@pytest.mark.parametrize("n", [5, 10, EXACT_MAX_PAIRS])
def test_exact_p_value_matches_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    diffs = rng.normal(0.4, 1.0, size=n)
    leader = {f"s{i}": 0.0 for i in range(n)}
    other = {f"s{i}": float(d) for i, d in enumerate(diffs)}
    reference = stats.permutation_test(
        (diffs,), np.mean, permutation_type="samples", n_resamples=math.inf
    ).pvalue
    result = paired_comparison(leader, other)
    assert result.exact
    assert result.p_value == pytest.approx(reference, abs=1e-12)


def test_monte_carlo_p_value_agrees_with_scipy_and_a_t_test() -> None:
    n = 60
    rng = np.random.default_rng(3)
    leader = {f"s{i}": float(v) for i, v in enumerate(rng.normal(10.0, 1.0, size=n))}
    other = {k: v + float(rng.normal(0.3, 1.0)) for k, v in leader.items()}
    diffs = np.array([other[k] - leader[k] for k in sorted(leader)])
    result = paired_comparison(leader, other, n_resamples=20_000)
    permutation = stats.permutation_test(
        (diffs,), np.mean, permutation_type="samples", n_resamples=20_000, random_state=0
    ).pvalue
    t_test = stats.ttest_1samp(diffs, 0.0).pvalue
    assert not result.exact
    assert 0.0 < result.p_value < 1.0
    assert result.p_value == pytest.approx(permutation, abs=0.01)
    assert result.p_value == pytest.approx(t_test, rel=0.25)


def test_only_shared_scenarios_are_paired() -> None:
    leader = {"a": 5.0, "b": 6.0, "c": 7.0, "d": 8.0, "e": 1.0, "f": 2.0, "only-leader": 100.0}
    other = {"a": 6.0, "b": 7.0, "c": 8.0, "d": 9.0, "e": 2.0, "f": 3.0, "only-other": -100.0}
    result = paired_comparison(leader, other)
    assert result.n_pairs == 6
    assert result.difference.value == pytest.approx(1.0)
    d = result.difference
    assert (d.low, d.high, d.method, d.n) == (1.0, 1.0, "sign-flip", 6)


def test_difference_is_other_minus_leader() -> None:
    leader = {f"s{i}": 10.0 + i for i in range(8)}
    other = {k: v - 2.0 for k, v in leader.items()}
    result = paired_comparison(leader, other)
    assert result.difference.value == pytest.approx(-2.0)
    assert result.p_value == pytest.approx(2 / 2**8)
    assert not tied(result)


def test_paired_comparison_is_deterministic_with_its_seed() -> None:
    rng = np.random.default_rng(9)
    leader = {f"s{i}": float(v) for i, v in enumerate(rng.normal(size=30))}
    other = {k: v + float(rng.normal(0.2)) for k, v in leader.items()}
    reversed_other = dict(reversed(list(other.items())))
    first = paired_comparison(leader, other, seed=4)
    assert first == paired_comparison(leader, reversed_other, seed=4)  # key order is irrelevant
    assert first != paired_comparison(leader, other, seed=5)


def test_no_shared_scenarios_gives_nan_and_counts_as_tied() -> None:
    result = paired_comparison({"a": 1.0}, {"b": 2.0})
    assert result.n_pairs == 0
    d = result.difference
    for value in (d.value, d.low, d.high, result.p_value):
        assert math.isnan(value)
    assert tied(result)


def test_tied_follows_the_p_value() -> None:
    def comparison(p_value: float) -> PairedComparison:
        return PairedComparison(
            n_pairs=10,
            # the interval excludes 0, yet only the p-value decides
            difference=Estimate(0.5, 0.1, 0.9, "sign-flip", n=10),
            p_value=p_value,
            exact=True,
        )

    assert tied(comparison(0.06))
    assert tied(comparison(0.05))
    assert not tied(comparison(0.04))
    assert tied(comparison(0.04), alpha=0.01)


def test_identical_cells_are_tied() -> None:
    scores = {f"s{i}": float(i) for i in range(20)}
    result = paired_comparison(scores, dict(scores))
    assert result.difference.value == 0.0
    assert result.p_value == 1.0
    assert tied(result)


def test_minimum_attainable_p_value() -> None:
    assert min_attainable_p(3) == 0.25  # the README's 3-scenario grid: nothing can pass 0.05
    assert min_attainable_p(5) == 2 / 32 and min_attainable_p(6) == 2 / 64
    assert min_attainable_p(17, n_resamples=999) == 1 / 1000  # sampled above 16 pairs
    assert math.isnan(min_attainable_p(0))
    assert pairs_needed(0.05) == 6 and pairs_needed(0.01) == 8
    result = paired_comparison({"a": 3.0, "b": 4.0, "c": 5.0}, {"a": 2.0, "b": 3.0, "c": 4.0})
    assert result.min_p_value == 0.25 == result.p_value


def test_verdict_needs_the_test_and_the_interval_to_agree() -> None:
    def comparison(p_value: float, low: float, high: float, n: int = 10) -> PairedComparison:
        difference = Estimate((low + high) / 2, low, high, "sign-flip", n=n)
        return PairedComparison(n, difference, p_value, True, min_attainable_p(n))

    assert verdict(comparison(0.01, -0.9, -0.1)) == "different"
    assert verdict(comparison(0.40, -0.5, 0.3)) == "not different"
    assert verdict(comparison(0.08, -0.9, -0.1)) == "inconclusive"  # interval excludes 0
    assert verdict(comparison(0.04, -0.9, 0.1)) == "inconclusive"  # interval holds 0
    assert verdict(comparison(0.25, -1.0, -1.0, n=3)) == "inconclusive"  # cannot reach 0.05
    assert verdict(comparison(0.25, -1.0, 1.0, n=3)) == "inconclusive"  # nor claim a tie
    assert verdict(paired_comparison({"a": 1.0}, {"b": 2.0})) == "inconclusive"  # no pairs


# -- intervals on few values ----------------------------------------------------------------


def test_exact_interval_by_hand() -> None:
    # Six values: 2/64 < 0.05, so only the most extreme subset means are rejected at 95%:
    # the interval runs from the smallest value to the largest.
    assert sign_flip_interval([3.0, 1.0, 4.0, 1.5, 5.0, 9.0]) == (1.0, 9.0)
    # Eight values 1..8: p = (1 + k) / 128 ≥ 0.05 needs k ≥ 6 subset means at or below the
    # end. The smallest are 1 {1}, 1.5 {1,2}, 2 {2}, {1,3}, {1,2,3}, then 7/3 {1,2,4}: the
    # 6th. The upper end mirrors it: 9 − 7/3.
    low, high = sign_flip_interval([float(v) for v in range(1, 9)])
    assert (low, high) == pytest.approx((7 / 3, 20 / 3))
    assert mean_interval([float(v) for v in range(1, 9)]).method == "sign-flip"


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_below_six_values_there_is_no_95_percent_interval(n: int) -> None:
    """With n values the exact test cannot go below p = 2 / 2**n ≥ 0.05: it rejects no
    value, so no interval exists; a bootstrap "interval" would be the range of the values."""
    values = _sample(n)
    interval = mean_interval(values)
    assert interval.method == "none" and math.isnan(interval.low) and math.isnan(interval.high)
    assert interval.value == pytest.approx(float(np.mean(values)))
    leader = {f"s{i}": 0.0 for i in range(n)}
    result = paired_comparison(leader, {k: -1.0 for k in leader})  # behind on every one
    assert result.difference.method == "none" and math.isnan(result.difference.low)
    assert verdict(result) == "inconclusive"  # as the test says: p = 2 / 2**n
    assert mean_interval(_sample(40)).method == "bootstrap"
    assert mean_interval([]).method == "none"


def _p_at(values: np.ndarray, centre: float) -> float:
    """The sign-flip p-value of `values` having their centre at `centre`."""
    zeros = {f"s{i}": 0.0 for i in range(len(values))}
    shifted = {f"s{i}": float(v - centre) for i, v in enumerate(values)}
    return paired_comparison(zeros, shifted).p_value


def test_the_exact_interval_agrees_with_the_test() -> None:
    """The interval is exactly the centres the sign-flip test does not reject: at each end
    p ≥ 0.05, just outside p < 0.05 (discrete and continuous values, 6 to 12 of them)."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(6, 13))
        values = (
            rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0], size=n)
            if trial % 2
            else rng.normal(0.5, 1.0, size=n)
        )
        low, high = sign_flip_interval(list(values))
        zeros = {f"s{i}": 0.0 for i in range(n)}
        assert _p_at(values, low) >= 0.05 and _p_at(values, high) >= 0.05
        assert _p_at(values, low - 1e-6) < 0.05 and _p_at(values, high + 1e-6) < 0.05
        result = paired_comparison(zeros, {f"s{i}": float(v) for i, v in enumerate(values)})
        assert (result.p_value < 0.05) == (not low <= 0.0 <= high)
        assert verdict(result) != "inconclusive"  # test and interval always agree


def _coverage(interval: object, n: int, reps: int, seed: int) -> float:
    """Share of `reps` seeded normal samples of size n whose interval holds the true mean 0."""
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        low, high = interval(list(rng.normal(0.0, 1.0, size=n)), rep)  # type: ignore[operator]
        hits += low <= 0.0 <= high
    return hits / reps


@pytest.mark.parametrize("n", [6, 8, 12])
def test_the_leaderboards_interval_covers_as_it_claims(n: int) -> None:
    """A seeded simulation: on 6 to 12 scenarios the interval the leaderboard shows holds the
    true mean in at least 95% of samples (less 3 standard errors of 2,000 draws); the
    percentile bootstrap it replaced falls well short there (0.87 on 6)."""

    def shown(values: list[float], rep: int) -> tuple[float, float]:
        interval = mean_interval(values, seed=rep)
        return interval.low, interval.high

    def bootstrap(values: list[float], rep: int) -> tuple[float, float]:
        _, low, high = bootstrap_mean_ci(values, n_resamples=2000, seed=rep)
        return low, high

    reps = 2000
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)
    assert _coverage(shown, n, reps, seed=n) >= floor
    if n == 6:
        assert _coverage(bootstrap, n, 500, seed=n) < 0.91
