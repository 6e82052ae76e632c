"""Weighted moments per cell, averaged per scenario, pooled across a leaderboard.

The pieces of `stats._ppi`'s variances: second moments of (human, judge) per cell
(`_spread`), scenario values from a cell's runs (`_by_scenario`: the scenario is the unit),
and a variance read from a few human scores pooled with the leaderboard's other cells and
held above the floor (`_pooled`, `stats._floor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.stats._judged import Judged

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]


def _sums(index: _Int, values: _Float, size: int) -> _Float:
    out: _Float = np.bincount(index, weights=values, minlength=size).astype(np.float64)
    return out


@dataclass(frozen=True)
class _Groups:
    """Observations averaged per (cell, scenario): the scenario values of some units."""

    cell: _Int
    weight: _Float
    y: _Float
    f: _Float


def _by_scenario(judged: Judged, units: _Int, weights: _Float, y: _Float, f: _Float) -> _Groups:
    """Each (cell, scenario) among ``units``: its weight and weighted means of y and f."""
    s = judged.n_scenarios
    key = judged.cell[units] * s + judged.scenario[units]
    found, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=weights, minlength=len(found)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_mean = np.bincount(inverse, weights=weights * y, minlength=len(found)) / total
        f_mean = np.bincount(inverse, weights=weights * f, minlength=len(found)) / total
    return _Groups((found // s).astype(np.intp), total, y_mean, f_mean)


@dataclass(frozen=True)
class _Spread:
    """Weighted second moments of (human, judge) per cell over some observations."""

    yy: _Float  # Σ u (y − ȳ)², with u the observations' weights (see `_spread`)
    yf: _Float
    ff: _Float
    total: _Float  # Σ u
    dof: _Float  # distinct observations − 1

    def residual(self, lam: _Float) -> _Float:
        """Each cell's variance of (human − λ · judge); NaN below two observations."""
        with np.errstate(invalid="ignore", divide="ignore"):
            out: _Float = (self.yy - 2.0 * lam * self.yf + lam * lam * self.ff) / self.total
            out = out * (self.dof + 1.0) / self.dof
        return np.where(self.dof >= 1, np.maximum(out, 0.0), np.nan)

    def cross(self, lam: _Float) -> _Float:
        """Each cell's covariance of the judge with (human − λ · judge)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            out: _Float = (self.yf - lam * self.ff) / self.total * (self.dof + 1.0) / self.dof
        return np.where(self.dof >= 1, out, np.nan)


def _spread(
    cells: _Int, weights: _Float, y: _Float, f: _Float, size: int, centre: _Float | None = None
) -> tuple[_Spread, _Float, _Float]:
    """Moments of (y, f) weighted by ``weights`` per cell, about their means weighted by
    ``centre`` (default: ``weights``); also returns those means."""
    total = _sums(cells, weights, size)
    centre = weights if centre is None else centre
    norm = _sums(cells, centre, size)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_mean = _sums(cells, centre * y, size) / norm
        f_mean = _sums(cells, centre * f, size) / norm
    dy, df = y - y_mean[cells], f - f_mean[cells]
    spread = _Spread(
        yy=_sums(cells, weights * dy * dy, size),
        yf=_sums(cells, weights * dy * df, size),
        ff=_sums(cells, weights * df * df, size),
        total=total,
        dof=np.bincount(cells, minlength=size).astype(np.float64) - 1.0,
    )
    return spread, y_mean, f_mean


def _pooled(judged: Judged, own: _Float, dof: _Float) -> tuple[_Float, _Float]:
    """Each cell's variance: the largest of its own, its pool's (dof-weighted) and the floor.

    A variance from two or three human scores is too unsure to rely on alone; cells of one
    leaderboard are scored by the same humans on the same scenarios, so their spreads are
    pooled, as in an analysis of variance. A cell whose own spread is larger keeps its own
    (and its own degrees of freedom); none goes below `Judged.floor`.
    """
    usable = np.isfinite(own) & (dof >= 1)
    totals = _sums(judged.pool, np.where(usable, own * dof, 0.0), judged.n_pools)
    pool_dof = _sums(judged.pool, np.where(usable, dof, 0.0), judged.n_pools)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(pool_dof > 0, totals / pool_dof, np.nan)[judged.pool]
    own = np.where(usable, own, np.nan)
    variance = np.fmax(np.fmax(own, pooled), judged.floor)
    dof_used = np.where(usable & ~(pooled > own), dof, pool_dof[judged.pool])
    return np.where(pool_dof[judged.pool] >= 1, variance, np.nan), dof_used


def _mean_of_pool(judged: Judged, own: _Float, dof: _Float) -> _Float:
    """The pool's dof-weighted mean of a per-cell figure (a covariance: no maximum)."""
    usable = np.isfinite(own) & (dof >= 1)
    totals = _sums(judged.pool, np.where(usable, own * dof, 0.0), judged.n_pools)
    pool_dof = _sums(judged.pool, np.where(usable, dof, 0.0), judged.n_pools)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: _Float = np.where(pool_dof > 0, totals / pool_dof, 0.0)[judged.pool]
    return out
