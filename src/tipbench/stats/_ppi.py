"""Prediction-powered estimates: the judge's score on every run, corrected by the human's.

A cell's mean is the mean of its runs' human scores (each scenario weighing the same). The
automatic judge scored every run; a human scored a sample of them. The estimate is

    mean = known + λ · (judge's weighted sum over the sampled population)
           + (weight of that population) · (mean over the sample of human − λ · judge)

(PPI++: Angelopoulos, Duchi and Zrnic, 2023; for a sample drawn with known unequal
probabilities the sample mean is weighted by their inverses: active statistical inference,
Zrnic and Candès, 2024). Whatever the judge's scores, its error averages out of the correction
term, so the estimate is as unbiased as the human scores' alone; the better the judge predicts
the human, the smaller the correction's variance. λ is chosen from the data to minimise the
variances of the leaderboard's cells (one λ for all cells: the judge's informativeness), is
clipped to [0, 1], and falls to 0 in a cell where it would widen the interval: there the
estimate is the human scores' alone.

The sample may come in any order that gives each run a known probability of having been
scored (see `Sample`): a uniformly shuffled order (within a cell, the first k of M open runs:
probability k / M, and the textbook PPI++ figures), or one that serves some runs sooner
(`judging_order`); the mean is then weighted by the inverse probabilities (Hájek). Runs a
human had scored before the order began (``known``) stand for themselves. With every human
score ``known`` and no judge, the estimate is the human tier's (`Judged.human_tier`).

The interval's variance has two parts: the sampling of the runs to score (zero once every run
is scored; the runs are the sampling's unit) and the scenarios themselves (a cell's scenarios
are a sample of the situations it will meet). The **scenario is the unit** of the latter:
each cell's runs are first averaged per scenario, and the spread is read across those
scenario values (cluster-robust by scenario: several runs of one scenario share its effect
and are not independent evidence). No variance is taken below the floor of `stats._floor`.
Two cells compared on the same scenarios are paired (`stats._paired`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from tipbench.stats._estimate import CONFIDENCE
from tipbench.stats._judged import Judged, Sample
from tipbench.stats._moments import (
    _by_scenario,
    _mean_of_pool,
    _pooled,
    _Spread,
    _spread,
    _sums,
)

__all__ = ["Estimates", "estimate"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_Bool = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Estimates:
    """Per cell (arrays of length C; NaN where a figure does not exist).

    Attributes:
        mean: The estimate of the cell's mean.
        variance: Its variance: ``scenario_variance + sampling_variance``.
        scenario_variance: The part from the cell's scenarios being a sample.
        sampling_variance: The part from scoring only a sample of the runs.
        df: Degrees of freedom of the t quantile (Satterthwaite: the judge's part of the
            variance is read on every scenario, the rest rests on the human scores).
        n_human: Human-scored units used (sampled, and known before sampling began).
        n_human_scenarios: Scenarios those units cover: what "enough judged" counts.
        n_sampled: Sampled units (a cell with open units and none sampled has no estimate).
        n_effective: Human-judged scenarios the estimate is worth: how many a human alone
            would need for the same variance (runs, where each scenario has one).
        lam: λ the cell used (0: the human scores alone).
        unit_variance: The variance of one scenario's value of the cell (at least its
            leaderboard's pooled one: a cell's own interval never rests on few scores alone).
        own_unit_variance: That variance read on the cell's own scenarios only (unbiased;
            what paired comparisons pool at the level of the pair, `stats._paired`).
        own_df: Degrees of freedom of ``own_unit_variance``'s human part (scenarios − 1).
        residual_variance: The variance of one run's human score less λ times the
            judge's: how far the judge's scores leave the human's unexplained.
    """

    mean: _Float
    variance: _Float
    scenario_variance: _Float
    sampling_variance: _Float
    df: _Float
    n_human: _Int
    n_human_scenarios: _Int
    n_sampled: _Int
    n_effective: _Float
    lam: _Float
    unit_variance: _Float
    residual_variance: _Float
    own_unit_variance: _Float
    own_df: _Float


class _Figures(NamedTuple):
    """A cell's variance read one way (the judge's scores at λ, or the human scores alone)."""

    variance: _Float  # scenario + sampling
    scenario: _Float  # from the cell's scenarios being a sample
    sampling: _Float  # from scoring only a sample of the runs
    df: _Float  # Satterthwaite's degrees of freedom
    unit: _Float  # the variance of one scenario's value
    residual: _Float  # one run's residual variance (human − λ · judge)
    own_unit: _Float  # the variance of one scenario's value, the cell's own scenarios only


def _imputed(judged: Judged) -> _Float:
    """The judge's scores, a cell's mean judge score where it has none (any fixed value works)."""
    auto = judged.auto
    seen = ~np.isnan(auto)
    counts = np.bincount(judged.cell[seen], minlength=judged.n_cells)
    totals = _sums(judged.cell[seen], auto[seen], judged.n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_mean = np.where(counts > 0, totals / np.maximum(counts, 1), 0.0)
    return np.where(seen, auto, cell_mean[judged.cell])


@dataclass(frozen=True)
class _Design:
    """What the sample says per cell: Hájek means, and the sampling variance's ingredients."""

    y: _Float  # Hájek means of the sampled units' human and judge scores
    f: _Float
    spread: _Spread  # weighted by v², v = unit weight / π
    gain: _Float  # sampling variance = gain · (residual variance of one unit)
    distinct: _Int  # units sampled
    v: _Float  # each sampled unit's weight


def _design(judged: Judged, sample: Sample, auto: _Float) -> _Design:
    """The sample's moments: a Hájek mean weighted by v = w / π, whose variance is
    (W / Σ v)² Σ v² (1 − π) (r − r̄)², W the weight of the open units (Poisson sampling,
    linearised; for a simple random sample of k from M it is M² (1 − k/M) / k² ·
    Σ w² (r − r̄)², the textbook one)."""
    c = judged.n_cells
    units = sample.unit
    cells = judged.cell[units]
    pi = np.clip(sample.inclusion, 1e-12, 1.0)
    v = judged.weight[units] / pi
    distinct = np.bincount(cells, minlength=c)
    y, f = judged.human[units], auto[units]
    spread, y_mean, f_mean = _spread(cells, v * v, y, f, c, centre=v)
    open_weight = _sums(judged.cell, np.where(judged.known, 0.0, judged.weight), c)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = (open_weight / _sums(cells, v, c)) ** 2
        kept = _sums(cells, v * v * (1.0 - pi), c)
        gain = np.where(distinct >= 1, kept * scale, np.nan)
    return _Design(y_mean, f_mean, spread, gain, distinct, v)


def _pooled_lambda(judged: Judged, d: _Design) -> _Float:
    """Per pool, the λ that minimises its cells' sampling variances (summed), in [0, 1]."""
    s = d.spread
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = d.gain / s.total * (s.dof + 1.0) / s.dof
    weight = np.where((s.dof >= 1) & np.isfinite(weight), weight, 0.0)
    numerator = _sums(judged.pool, weight * s.yf, judged.n_pools)
    denominator = _sums(judged.pool, weight * s.ff, judged.n_pools)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(denominator > 0, numerator / denominator, 0.0)
    return np.clip(lam, 0.0, 1.0)


@dataclass(frozen=True)
class _Population:
    """How a cell's scenario values vary, the human scores' part read through the judge's.

    One scenario's value varies as λ · judge + residual, so its variance is
    λ² · var(judge) + var(residual) + 2λ · cov(judge, residual). The judge's variance is
    read on every scenario; only the residual's needs human scores (``scenarios``). The
    runs' own residual spread (``runs``) is what the sampling of runs leaves.
    """

    judge: _Float  # var(judge's scenario values) over every scenario of the cell
    judge_dof: _Float
    squares: _Float  # Σ over the cell's scenarios of their weight²
    scenarios: _Spread  # (human, judge) scenario values where a human scored, weighted
    runs: _Spread  # (human, judge) over the human-scored runs, weighted
    n_labelled: _Int
    n_scenarios: _Int

    def variance(self, judged: Judged, lam: _Float) -> tuple[_Float, _Float, _Float, _Float]:
        """The variance of one scenario's value: the judge's part, the human scores' part
        (at least the floor; pooled with the leaderboard's cells), the degrees of freedom of
        the latter, and the human part read on the cell's own scenarios alone."""
        own = self.scenarios.residual(lam)
        residual, dof = _pooled(judged, own, self.scenarios.dof)
        cross = _mean_of_pool(judged, self.scenarios.cross(lam), self.scenarios.dof)
        judge_part = lam * lam * self.judge
        human_part = np.maximum(residual + 2.0 * lam * cross, judged.floor)
        own_cross = np.where(self.scenarios.dof >= 1, self.scenarios.cross(lam), 0.0)
        own_part = np.maximum(own + 2.0 * lam * own_cross, judged.floor)
        own_part = np.where(np.isfinite(own), own_part, human_part)
        return judge_part, np.where(np.isfinite(residual), human_part, np.nan), dof, own_part


def _population(judged: Judged, sample: Sample, auto: _Float, d: _Design) -> _Population:
    c = judged.n_cells
    w = judged.weight
    every = _by_scenario(judged, np.arange(len(w)), w, auto, auto)
    judge_spread, _, _ = _spread(every.cell, every.weight, every.f, every.f, c)
    known = np.flatnonzero(judged.known & ~np.isnan(judged.human))
    open_weight = _sums(judged.cell, np.where(judged.known, 0.0, w), c)
    cells = judged.cell[sample.unit]
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = open_weight[cells] / _sums(cells, d.v, c)[cells]
        judge = judge_spread.ff / judge_spread.total * (judge_spread.dof + 1) / judge_spread.dof
    units = np.concatenate([known, sample.unit])
    weights = np.concatenate([w[known], d.v * scale])
    y, f = judged.human[units], auto[units]
    runs, _, _ = _spread(judged.cell[units], weights, y, f, c)
    labelled = _by_scenario(judged, units, weights, y, f)
    scenarios, _, _ = _spread(labelled.cell, labelled.weight, labelled.y, labelled.f, c)
    return _Population(
        judge=judge,
        judge_dof=judge_spread.dof,
        squares=_sums(every.cell, every.weight**2, c),
        scenarios=scenarios,
        runs=runs,
        n_labelled=np.bincount(judged.cell[units], minlength=c),
        n_scenarios=np.bincount(labelled.cell, minlength=c),
    )


def estimate(judged: Judged, sample: Sample, *, use_judge: bool = True) -> Estimates:
    """Every cell's prediction-powered mean, its variance, and what the judge's scores were worth.

    Args:
        judged: The units, their judge and human scores.
        sample: Which human scores to use, and how they were drawn.
        use_judge: False gives the human scores' estimate alone (λ = 0), for comparison.

    Returns:
        The per-cell figures; a cell without a sampled unit (and unscored units left), or
        in a leaderboard with fewer than two human-judged scenarios in every cell, has none.
    """
    c = judged.n_cells
    auto = _imputed(judged)
    d = _design(judged, sample, auto)
    pop = _population(judged, sample, auto, d)
    w = judged.weight
    open_weight = _sums(judged.cell, np.where(judged.known, 0.0, w), c)
    fully_known = open_weight <= 0.0

    def figures(lam: _Float, fitted: bool) -> _Figures:
        # One run's residual variance, on every human-scored run of the cell: what the
        # unscored runs may still hide (the sampling's unit is the run).
        residual, dof = _pooled(judged, pop.runs.residual(lam), pop.runs.dof)
        if fitted:  # λ was fitted to these residuals: one degree of freedom less
            with np.errstate(invalid="ignore", divide="ignore"):
                residual = np.maximum(residual * dof / (dof - 1.0), judged.floor)
            dof = dof - 1.0
        done = fully_known | (d.gain == 0.0)  # every open unit scored: nothing left to sample
        with np.errstate(invalid="ignore"):
            sampling = np.where(done, 0.0, np.where(dof >= 1, d.gain * residual, np.nan))
        judge_part, human_part, human_dof, own_part = pop.variance(judged, lam)
        human_dof = np.fmin(human_dof, np.where(dof >= 1, dof, np.nan))
        unit = judge_part + human_part
        scenario = unit * pop.squares
        variance = scenario + sampling
        # Satterthwaite: the judge's part is read on every scenario (its own degrees of
        # freedom); everything else rests on the human scores' scenarios.
        judged_part = judge_part * pop.squares
        rest = variance - judged_part
        with np.errstate(invalid="ignore", divide="ignore"):
            df = variance**2 / (judged_part**2 / pop.judge_dof + rest**2 / human_dof)
        df = np.where(rest > 0, df, pop.judge_dof)
        return _Figures(variance, scenario, sampling, df, unit, residual, judge_part + own_part)

    fitted = use_judge
    lam = _pooled_lambda(judged, d)[judged.pool] if use_judge else np.zeros(c)
    with_judge = figures(lam, fitted)
    alone = figures(np.zeros(c), False)
    # The judge never widens a cell's interval: where it would, the human scores alone.
    judged_width = _t(with_judge.df) ** 2 * with_judge.variance
    keep = np.isfinite(judged_width) & ~(judged_width > _t(alone.df) ** 2 * alone.variance)
    lam = np.where(keep, lam, 0.0)
    kept = _Figures(*(np.where(keep, a, b) for a, b in zip(with_judge, alone, strict=True)))
    known_sum = _sums(judged.cell, w * np.where(judged.known, judged.human, 0.0), c)
    open_auto = _sums(judged.cell, np.where(judged.known, 0.0, w * auto), c)
    with np.errstate(invalid="ignore"):
        mean = known_sum + open_weight * d.y + lam * (open_auto - open_weight * d.f)
    mean = np.where(fully_known, known_sum, mean)
    empty = np.bincount(judged.cell, minlength=c) == 0
    mean, variance = np.where(empty, np.nan, mean), np.where(empty, np.nan, kept.variance)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_effective = kept.unit / variance
    return Estimates(
        mean=mean,
        variance=variance,
        scenario_variance=kept.scenario,
        sampling_variance=kept.sampling,
        df=kept.df,
        n_human=pop.n_labelled,
        n_human_scenarios=pop.n_scenarios,
        n_sampled=d.distinct,
        n_effective=n_effective,
        lam=lam,
        unit_variance=kept.unit,
        residual_variance=np.where(fully_known, np.nan, kept.residual),
        own_unit_variance=kept.own_unit,
        own_df=pop.scenarios.dof,
    )


def _t(df: _Float) -> _Float:
    from scipy.special import stdtrit

    out: _Float = np.asarray(stdtrit(df, 0.5 + CONFIDENCE / 2.0), dtype=np.float64)
    return out
