"""Two cells' prediction-powered estimates compared, paired by scenario, and t quantiles.

Two cells are compared on the same scenarios, so their scenario parts are paired: the
variance of the difference subtracts their covariance across scenarios, read on scenario
values (a scenario's runs averaged first: the scenario is the unit). A difference's variance
never goes below the floor of two scenario values (`stats._floor`): two cells that moved
together on a few scenarios have shown no spread, not proved that there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.stats._judged import Judged, Sample
from tipbench.stats._ppi import Estimates, _imputed

__all__ = ["Difference", "differences", "half_width", "t_p_value", "t_quantile"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_Bool = npt.NDArray[np.bool_]
MIN_COVARIANCE_SCENARIOS = 3
"""Scenarios both cells must have human scores on before their covariance is estimated."""


@dataclass(frozen=True)
class Difference:
    """Pairs of cells compared (arrays of length P): ``mean`` is cell b minus cell a."""

    a: _Int
    b: _Int
    mean: _Float
    variance: _Float
    df: _Float
    unit_variance: _Float  # of one scenario's difference


def _scenario_table(judged: Judged, values: _Float, usable: _Bool) -> tuple[_Float, _Float]:
    """(C, S) a value per cell and scenario (NaN: not usable), and each one's weight."""
    n_scenarios = int(judged.scenario.max()) + 1 if len(judged.scenario) else 0
    shape = (judged.n_cells, n_scenarios)
    flat = judged.cell * n_scenarios + judged.scenario
    size = shape[0] * shape[1]
    weight = np.bincount(flat, weights=judged.weight, minlength=size).reshape(shape)
    totals = np.bincount(flat, weights=np.where(usable, values, 0.0), minlength=size)
    counts = np.bincount(flat, weights=usable.astype(np.float64), minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        table: _Float = np.where(counts > 0, totals / counts, np.nan)
    return table.reshape(shape), weight.astype(np.float64)


def _covariance(table: _Float, a: _Int, b: _Int, minimum: int) -> _Float:
    """Per pair, the covariance over the scenarios where both rows have values (0 below minimum)."""
    va, vb = table[a], table[b]
    both = ~np.isnan(va) & ~np.isnan(vb)
    o = both.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = np.where(both, va, 0.0).sum(axis=1) / o
        mb = np.where(both, vb, 0.0).sum(axis=1) / o
        products = np.where(both, (va - ma[:, None]) * (vb - mb[:, None]), 0.0)
        cov = products.sum(axis=1) / (o - 1.0)
    return np.where(o >= minimum, cov, 0.0)


def differences(
    judged: Judged, sample: Sample, estimates: Estimates, a: _Int, b: _Int
) -> Difference:
    """Cell b minus cell a for each pair, their scenario parts paired.

    The variance is both cells' sampling variances (their samples are independent given
    where the draws fell) plus the scenario variance of the difference: each cell's, less
    twice their covariance across scenarios. That covariance is the judge's (read on every
    scenario) times both λ, plus the residuals' over the scenarios both cells have human
    scores on (none is assumed below `MIN_COVARIANCE_SCENARIOS` of them, which overstates
    the variance when cells rise and fall together with the scenario, as they do). One
    scenario's difference varies at least as two scenario values' rounding does (the floor).
    """
    e = estimates
    auto = _imputed(judged)
    everyone = np.ones(len(judged.cell), dtype=bool)
    judge, weight = _scenario_table(judged, auto, everyone)
    usable = judged.known & ~np.isnan(judged.human)
    usable[sample.unit] = True
    residuals, _ = _scenario_table(judged, judged.human - e.lam[judged.cell] * auto, usable)
    judge_cov = _covariance(judge, a, b, 2)
    residual_cov = _covariance(residuals, a, b, MIN_COVARIANCE_SCENARIOS)
    cov = e.lam[a] * e.lam[b] * judge_cov + residual_cov
    bound = np.sqrt(e.unit_variance[a] * e.unit_variance[b])
    cov = np.clip(cov, -bound, bound)
    cross = (weight[a] * weight[b]).sum(axis=1)
    squares_a, squares_b = (weight[a] ** 2).sum(axis=1), (weight[b] ** 2).sum(axis=1)
    scenario = e.unit_variance[a] * squares_a + e.unit_variance[b] * squares_b
    floor = 2.0 * judged.floor
    scenario = np.maximum(scenario - 2.0 * cov * cross, floor * 0.5 * (squares_a + squares_b))
    unit_variance = np.maximum(e.unit_variance[a] + e.unit_variance[b] - 2.0 * cov, floor)
    return Difference(
        a=a,
        b=b,
        mean=e.mean[b] - e.mean[a],
        variance=scenario + e.sampling_variance[a] + e.sampling_variance[b],
        df=np.minimum(e.df[a], e.df[b]),
        unit_variance=unit_variance,
    )


def t_quantile(p: float, df: _Float) -> _Float:
    """Student's t quantile (normal where df is infinite); NaN where df is NaN."""
    from scipy.special import stdtrit

    out: _Float = np.asarray(stdtrit(df, p), dtype=np.float64)
    return out


def t_p_value(t: _Float, df: _Float) -> _Float:
    """Two-sided p-value of Student's t statistic ``t`` with ``df`` degrees of freedom."""
    from scipy.special import stdtr

    out: _Float = np.asarray(2.0 * stdtr(df, -np.abs(t)), dtype=np.float64)
    return out


def half_width(variance: _Float, df: _Float, confidence: float) -> _Float:
    """Half the width of the t interval at ``confidence``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    q = t_quantile(1.0 - (1.0 - confidence) / 2.0, df)
    return q * np.sqrt(variance)
