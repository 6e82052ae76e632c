"""The combined tier's estimates checked against `ppi-python` (`ppi_py`, the reference
implementation of PPI++ by its authors) where both apply (issue 33, item 1).

Both apply on one cell whose runs each have a scenario of their own, with a uniformly
drawn sample of them scored by a human and no variance floor: `ppi_py`'s labelled data are
the sample (human and judge scores), its unlabelled data every run's judge score.

- At the same λ (ours), the point estimates are the same number, and so are the classical
  ones (λ = 0). The standard errors agree up to corrections of order 1/k on k human
  scores: ours divides by k − 1 (and, λ being fitted, k − 2) where `ppi_py` divides by k,
  and reads the judge's variance on every run; `ppi_py`'s interval is normal, ours t.
- Power-tuned, each library picks its own λ: ours minimises the variance of this finite
  set of runs, `ppi_py`'s (Angelopoulos, Duchi and Zrnic, 2023, eq. 6) that of a sample
  drawn apart from the unlabelled data. They differ by sampling noise, so the estimates
  differ by a small part of the interval and the intervals are about as wide.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import ppi_py
import pytest
from scipy.stats import norm

from tipbench.stats import ALPHA, CONFIDENCE, Estimates, Judged, Sample, estimate, half_width

_Float = npt.NDArray[np.float64]


def _world(seed: int, runs: int, scored: int) -> tuple[_Float, _Float, npt.NDArray[np.intp]]:
    """Judge scores, human scores (a linear function of the judge's plus noise), and the
    runs a human scored (drawn uniformly)."""
    rng = np.random.default_rng(seed)
    judge = rng.normal(10.0, 2.0, runs)
    human = 1.0 + 0.8 * judge + rng.normal(0.0, 1.0, runs)
    return judge, human, np.sort(rng.choice(runs, scored, replace=False))


def _ours(judge: _Float, human: _Float, sample: npt.NDArray[np.intp], use_judge: bool) -> Estimates:
    runs = len(judge)
    shown = np.full(runs, np.nan)
    shown[sample] = human[sample]
    judged = Judged.build(
        np.zeros(runs, dtype=np.intp),
        np.arange(runs),  # a scenario per run
        judge,
        shown,
        np.zeros(runs, dtype=bool),
        np.zeros(1, dtype=np.intp),
    )
    return estimate(judged, Sample.uniform(judged, sample), use_judge=use_judge)


def _theirs_se(low: float, high: float) -> float:
    """The standard error behind `ppi_py`'s normal interval."""
    return (high - low) / (2.0 * float(norm.ppf(1.0 - ALPHA / 2.0)))


def _ppi(
    judge: _Float, human: _Float, sample: npt.NDArray[np.intp], lam: float | None
) -> tuple[float, float, float]:
    """`ppi_py`'s point estimate and interval at level 1 − ALPHA."""
    labelled, predicted = human[sample], judge[sample]
    point = ppi_py.ppi_mean_pointestimate(labelled, predicted, judge, lam=lam)
    low, high = ppi_py.ppi_mean_ci(labelled, predicted, judge, alpha=ALPHA, lam=lam)
    return float(np.squeeze(point)), float(np.squeeze(low)), float(np.squeeze(high))


@pytest.mark.parametrize(("seed", "runs", "scored"), [(0, 2000, 300), (1, 2000, 300), (2, 500, 60)])
def test_at_the_same_lambda_the_estimate_is_ppi_pythons(seed: int, runs: int, scored: int) -> None:
    judge, human, sample = _world(seed, runs, scored)
    ours = _ours(judge, human, sample, use_judge=True)
    lam = float(ours.lam[0])
    assert 0.0 < lam < 1.0  # not clipped: both libraries' formulas apply as they are
    point, low, high = _ppi(judge, human, sample, lam)
    assert ours.mean[0] == pytest.approx(point, rel=1e-12)
    se = float(np.sqrt(ours.variance[0]))
    assert se == pytest.approx(_theirs_se(low, high), rel=2.0 / scored)


@pytest.mark.parametrize(("seed", "runs", "scored"), [(0, 2000, 300), (2, 500, 60)])
def test_without_the_judge_both_give_the_classical_estimate(
    seed: int, runs: int, scored: int
) -> None:
    """λ = 0: the mean of the human scores and its standard error (`ppi_py` calls this the
    classical interval)."""
    judge, human, sample = _world(seed, runs, scored)
    ours = _ours(judge, human, sample, use_judge=False)
    point, low, high = _ppi(judge, human, sample, 0.0)
    assert ours.mean[0] == pytest.approx(point, rel=1e-12) == pytest.approx(human[sample].mean())
    se = float(np.sqrt(ours.variance[0]))
    assert se == pytest.approx(_theirs_se(low, high), rel=2.0 / scored)


@pytest.mark.parametrize("seed", range(5))
def test_power_tuned_estimates_agree_with_ppi_pythons(seed: int) -> None:
    """Each with its own λ: the estimates lie within a fifth of a half-width of each other,
    the half-widths within 5%, and both are far narrower than the human scores' alone."""
    judge, human, sample = _world(seed, 2000, 300)
    ours = _ours(judge, human, sample, use_judge=True)
    point, low, high = _ppi(judge, human, sample, None)
    half = float(half_width(ours.variance, ours.df, CONFIDENCE)[0])
    theirs = (high - low) / 2.0
    assert abs(float(ours.mean[0]) - point) < 0.2 * theirs
    assert half == pytest.approx(theirs, rel=0.05)
    alone = _ours(judge, human, sample, use_judge=False)
    assert half < 0.75 * float(half_width(alone.variance, alone.df, CONFIDENCE)[0])
