"""Two cells' prediction-powered estimates compared, paired by scenario, and t quantiles.

Two cells are compared on the same scenarios, so their scenario parts are paired: the
variance of the difference subtracts their covariance across scenarios, read on scenario
values (a scenario's runs averaged first: the scenario is the unit). A difference's variance
never goes below the floor of two scenario values (`stats._floor`): two cells that moved
together on a few scenarios have shown no spread, not proved that there is none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from tipbench.stats._judged import Judged, Sample
from tipbench.stats._ppi import Estimates, _imputed

__all__ = [
    "Difference",
    "PairPool",
    "differences",
    "half_width",
    "pool_pairs",
    "t_p_value",
    "t_quantile",
]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_Bool = npt.NDArray[np.bool_]
VOLATILE_QUANTILE = 0.9
"""A pair's own variance past this quantile of the F distribution times its leaderboard's
pooled one marks it volatile: it is read at its own (`Difference.pooled_with`)."""
MIN_COVARIANCE_SCENARIOS = 3
"""Scenarios both cells must have human scores on before their covariance is estimated."""


@dataclass(frozen=True)
class Difference:
    """Pairs of cells compared (arrays of length P): ``mean`` is cell b minus cell a.

    Attributes:
        a: The first cell of each pair; b: the second.
        mean: b minus a.
        scenario_variance: The part of its variance from the scenarios being a sample.
        sampling_variance: The part from scoring only a sample of the runs (both cells').
        scenario_df: Degrees of freedom of the scenario part (scenarios − 1, or the
            leaderboard's pooled ones: `pooled_with`).
        sampling_df: Degrees of freedom of the sampling part.
        unit_variance: The variance of one scenario's difference.
        horizon_variance: The variance once every run is judged (the scenario part at every
            run's weights): where the confidence sequences end (`stats._confseq`).
    """

    a: _Int
    b: _Int
    mean: _Float
    scenario_variance: _Float
    sampling_variance: _Float
    scenario_df: _Float
    sampling_df: _Float
    unit_variance: _Float
    horizon_variance: _Float

    @property
    def variance(self) -> _Float:
        out: _Float = self.scenario_variance + self.sampling_variance
        return out

    @property
    def df(self) -> _Float:
        """Satterthwaite's degrees of freedom of the two parts."""
        scenario, sampling = self.scenario_variance, self.sampling_variance
        with np.errstate(invalid="ignore", divide="ignore"):
            spread = scenario**2 / self.scenario_df + np.where(
                sampling > 0, sampling**2 / self.sampling_df, 0.0
            )
            out: _Float = np.where(spread > 0, self.variance**2 / spread, self.scenario_df)
        return out

    def pooled_with(self, pool: PairPool, pools: _Int) -> Difference:
        """The same pairs read at their leaderboard's pooled variance (``pools``: each pair's
        pool), with its degrees of freedom and the scenario parts scaled to it, except a pair
        whose own variance is larger than the pool's by more than `VOLATILE_QUANTILE` of an
        F test: it keeps its own (see `pool_pairs`)."""
        from scipy.special import fdtri

        pooled = pool.unit_variance[pools]
        with np.errstate(invalid="ignore"):
            bound = pooled * fdtri(self.scenario_df, pool.df[pools], VOLATILE_QUANTILE)
        steady = np.isfinite(pooled) & (self.unit_variance <= bound)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(steady, pooled / self.unit_variance, 1.0)
        return replace(
            self,
            scenario_variance=self.scenario_variance * scale,
            scenario_df=np.where(steady, pool.df[pools], self.scenario_df),
            unit_variance=self.unit_variance * scale,
            horizon_variance=self.horizon_variance * scale,
        )


@dataclass(frozen=True)
class PairPool:
    """Per pool (leaderboard): the variance of one scenario's difference pooled over every
    pair of its comparable cells, and its degrees of freedom (NaN: fewer than two cells)."""

    unit_variance: _Float
    df: _Float


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
    where the draws fell) plus the scenario variance of the difference: each cell's own
    (read on its own scenarios, not pooled: `pool_pairs` pools at the level of the pair),
    less twice their covariance across scenarios. That covariance is the judge's (read on
    every scenario) times both λ, plus the residuals' over the scenarios both cells have
    human scores on (none is assumed below `MIN_COVARIANCE_SCENARIOS` of them, which
    overstates the variance when cells rise and fall together with the scenario, as they
    do). One scenario's difference varies at least as two scenario values' rounding does
    (the floor). The horizon's variance is the same scenario part at every run's weights.
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
    unit_a, unit_b = e.own_unit_variance[a], e.own_unit_variance[b]
    bound = np.sqrt(unit_a * unit_b)
    cov = np.clip(cov, -bound, bound)
    floor = 2.0 * judged.floor

    def scenario_part(table: _Float) -> _Float:
        squares_a, squares_b = (table[a] ** 2).sum(axis=1), (table[b] ** 2).sum(axis=1)
        cross = (table[a] * table[b]).sum(axis=1)
        part = unit_a * squares_a + unit_b * squares_b - 2.0 * cov * cross
        out: _Float = np.maximum(part, floor * 0.5 * (squares_a + squares_b))
        return out

    with np.errstate(invalid="ignore"):
        sampling_df = np.fmin(e.df[a], e.df[b])
    return Difference(
        a=a,
        b=b,
        mean=e.mean[b] - e.mean[a],
        scenario_variance=scenario_part(weight),
        sampling_variance=e.sampling_variance[a] + e.sampling_variance[b],
        scenario_df=np.minimum(e.own_df[a], e.own_df[b]),
        sampling_df=sampling_df,
        unit_variance=np.maximum(unit_a + unit_b - 2.0 * cov, floor),
        horizon_variance=scenario_part(judged.scenario_weights()),
    )


def pool_pairs(judged: Judged, sample: Sample, estimates: Estimates, cells: _Bool) -> PairPool:
    """The variance of one scenario's difference, pooled per pool over every pair of
    ``cells`` (weighted by their degrees of freedom), as the two-way analysis of variance
    of cell × scenario pools its interaction: the mean over the C(C − 1)/2 pairs of their
    variances is twice its mean square, whose (C − 1)(S − 1) degrees of freedom are 2 / C
    times theirs added up. Cells of one leaderboard are judged by the same people on the
    same scenarios; a pair whose own variance is significantly larger keeps it
    (`Difference.pooled_with`), so a volatile cell is never compared at the others'
    steadiness."""
    pools = judged.n_pools
    members = np.flatnonzero(cells)
    order = members[np.argsort(judged.pool[members], kind="stable")]
    pool_of = judged.pool[order]
    i, j = np.triu_indices(len(order), 1)
    same = pool_of[i] == pool_of[j]
    a, b = order[i[same]], order[j[same]]
    pair = differences(judged, sample, estimates, a, b)
    df = np.where(np.isfinite(pair.unit_variance), pair.scenario_df, 0.0)
    df = np.where(df > 0, df, 0.0)
    where = judged.pool[a]
    total_df = np.bincount(where, weights=df, minlength=pools)
    weighted = np.bincount(
        where, weights=np.where(df > 0, df * pair.unit_variance, 0.0), minlength=pools
    )
    size = np.bincount(pool_of, minlength=pools).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(total_df > 0, weighted / total_df, np.nan)
        pooled_df = np.where(size >= 2, 2.0 / size * total_df, np.nan)
    return PairPool(unit, pooled_df)


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
