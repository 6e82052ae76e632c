"""The combined tier's estimates: small cases by hand, then seeded simulations (issue 23)."""

from __future__ import annotations

import numpy as np
import pytest

from tipbench.stats import Judged, Sample, differences, estimate, half_width, resolution_variance


def _one_cell(auto: list[float], human: list[float | None]) -> Judged:
    n = len(auto)
    return Judged(
        cell=np.zeros(n, dtype=np.intp),
        scenario=np.arange(n),
        weight=np.full(n, 1.0 / n),
        auto=np.asarray(auto, dtype=np.float64),
        human=np.asarray([np.nan if h is None else h for h in human], dtype=np.float64),
        known=np.zeros(n, dtype=bool),
        pool=np.zeros(1, dtype=np.intp),
    )


def test_human_scores_alone_give_the_t_interval_of_the_sampled_runs() -> None:
    judged = _one_cell([3, 1, 4, 1, 5, 9], [6, 8, 10, None, None, None])
    sample = Sample.uniform(judged, np.arange(3))
    alone = estimate(judged, sample, use_judge=False)
    assert alone.mean[0] == pytest.approx(8.0)
    # The scenarios' part (s²/6) and the sampling's ((1/3 − 1/6) s²) add up to s²/3.
    assert alone.variance[0] == pytest.approx(4.0 / 3.0)
    assert alone.df[0] == pytest.approx(2.0)
    assert alone.lam[0] == 0.0
    assert alone.n_effective[0] == pytest.approx(3.0)


def test_a_small_case_worked_by_hand() -> None:
    """Judge 1..5 on five runs; a human scored the first three: 1.5, 2, 3.5.

    Sample means: human 7/3, judge 2; λ = Σ(y−ȳ)(f−f̄) / Σ(f−f̄)² = 2/2 = 1. The estimate is
    7/3 + 1 · (3 − 2) = 10/3. Residuals y − f: 0.5, 0, 0.5 (mean 1/3, Σ squares about it 1/6),
    their variance with λ fitted: (1/6) / (3 − 2) = 1/6, so the sampling part is
    (1/3 − 1/5) · 1/6 = 1/45. One run's variance: λ² var(judge) + var(residual) =
    2.5 + (1/6)/2 = 31/12, over 5 runs: 31/60. Total 31/60 + 1/45 = 97/180.
    """
    judged = _one_cell([1, 2, 3, 4, 5], [1.5, 2.0, 3.5, None, None])
    sample = Sample.uniform(judged, np.arange(3))
    combined = estimate(judged, sample)
    assert combined.lam[0] == pytest.approx(1.0)
    assert combined.mean[0] == pytest.approx(10.0 / 3.0)
    assert combined.sampling_variance[0] == pytest.approx(1.0 / 45.0)
    assert combined.scenario_variance[0] == pytest.approx(31.0 / 60.0)
    assert combined.variance[0] == pytest.approx(97.0 / 180.0)
    # Satterthwaite: 0.5 from the judge (4 df) and 7/180 from the humans (1 df).
    expected_df = (97 / 180) ** 2 / (0.5**2 / 4 + (7 / 180) ** 2 / 1)
    assert combined.df[0] == pytest.approx(expected_df)
    alone = estimate(judged, sample, use_judge=False)
    assert (
        half_width(combined.variance, combined.df, 0.95)[0]
        < half_width(alone.variance, alone.df, 0.95)[0]
    )


def test_a_judge_that_is_the_human_plus_a_constant_recovers_every_run() -> None:
    human = [7.0, 9.0, 8.0, 12.0, 10.0, 6.0]
    judged = _one_cell([h - 3.0 for h in human], [*human[:3], None, None, None])
    combined = estimate(judged, Sample.uniform(judged, np.arange(3)))
    assert combined.mean[0] == pytest.approx(np.mean(human))
    assert combined.sampling_variance[0] == pytest.approx(0.0, abs=1e-12)
    assert combined.variance[0] == pytest.approx(np.var(human, ddof=1) / 6)


def test_unequal_inclusion_probabilities_weigh_the_scores() -> None:
    judged = _one_cell([0, 0, 0, 0], [2.0, 6.0, None, None])
    sample = Sample(np.arange(2), np.asarray([0.8, 0.2]))
    alone = estimate(judged, sample, use_judge=False)
    # Hájek: (2/0.8 + 6/0.2) / (1/0.8 + 1/0.2) = 32.5 / 6.25
    assert alone.mean[0] == pytest.approx(5.2)


def test_runs_known_before_sampling_stand_for_themselves() -> None:
    judged = _one_cell([5, 5, 5, 5], [4.0, 8.0, 6.0, None])
    known = np.asarray([True, True, False, False])
    judged = Judged(**{**judged.__dict__, "known": known})
    # Two open runs, one sampled (6): they are estimated at 6, the known ones count as is.
    result = estimate(judged, Sample.uniform(judged, np.asarray([2])), use_judge=False)
    assert result.mean[0] == pytest.approx((4 + 8 + 6 + 6) / 4)


def test_paired_cells_that_move_together_differ_by_their_shift_alone() -> None:
    base = [7.0, 9.0, 8.0, 12.0]
    n = 4
    judged = Judged(
        cell=np.repeat([0, 1], n),
        scenario=np.tile(np.arange(n), 2),
        weight=np.full(2 * n, 1.0 / n),
        auto=np.zeros(2 * n),
        human=np.asarray(base + [b + 1.0 for b in base]),
        known=np.ones(2 * n, dtype=bool),
        pool=np.zeros(2, dtype=np.intp),
    )
    empty = Sample(np.zeros(0, dtype=np.intp), np.zeros(0))
    result = estimate(judged, empty)
    pair = differences(judged, empty, result, np.asarray([0]), np.asarray([1]))
    assert pair.mean[0] == pytest.approx(1.0)
    assert pair.variance[0] == pytest.approx(0.0, abs=1e-12)


def test_runs_of_one_scenario_are_not_independent_evidence() -> None:
    """Four scenarios, each run twice with the same scores: the cell mean's variance is that
    of the four scenario values, not of eight independent runs (cluster-robust by scenario).
    """
    values = [7.0, 9.0, 8.0, 12.0]
    once = Judged.build(
        np.zeros(4, dtype=np.intp), np.arange(4), np.full(4, np.nan), np.asarray(values),
        np.ones(4, dtype=bool), np.zeros(1, dtype=np.intp),
    )  # fmt: skip
    twice = Judged.build(
        np.zeros(8, dtype=np.intp), np.repeat(np.arange(4), 2), np.full(8, np.nan),
        np.repeat(values, 2), np.ones(8, dtype=bool), np.zeros(1, dtype=np.intp),
    )  # fmt: skip
    one = estimate(once, Sample.none(), use_judge=False)
    two = estimate(twice, Sample.none(), use_judge=False)
    assert one.variance[0] == pytest.approx(np.var(values, ddof=1) / 4)
    assert two.variance[0] == pytest.approx(one.variance[0])
    assert two.df[0] == pytest.approx(3.0)


def test_identical_scores_borrow_the_floor() -> None:
    """Human scores 14, 14, 14 on three scenarios: no spread is seen, so the variance of one
    scenario's value is the rubric's resolution (3/12 on the composite), not 0."""
    judged = Judged.build(
        np.zeros(3, dtype=np.intp), np.arange(3), np.full(3, np.nan), np.full(3, 14.0),
        np.ones(3, dtype=bool), np.zeros(1, dtype=np.intp), resolution_variance(3),
    )  # fmt: skip
    result = estimate(judged, Sample.none(), use_judge=False)
    assert result.unit_variance[0] == pytest.approx(0.25)
    assert result.variance[0] == pytest.approx(0.25 / 3)
