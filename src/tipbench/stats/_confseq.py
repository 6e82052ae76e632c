"""Comparisons with the leader that hold at every look up to the experiment's horizon.

A 95% interval is right 95% of the time when it is read once; a judge who reads it after
every save and stops the first time it excludes 0 is wrong far more often. These sequences
hold at every look at once, and they are made for the experiment they are read on, whose
runs are known: the evidence grows from nothing to the **horizon**, every run judged, and
no further. That finite horizon is what makes them tight.

For the difference d between two cells, with variance V now and V_H once every run is
judged (the scenarios' part alone: `Difference.horizon_variance`), the information is
I = 1/V and the horizon's I_H = 1/V_H. On the information scale the estimate's error
behaves as a Brownian motion: S(I) = I · (d − δ) is one, with variance I, read at whatever
I the judging has reached (the canonical joint distribution of sequential estimates,
Jennison and Turnbull, 2000, ch. 3; the judging order's labels arrive in a random order).
S crosses the constant boundary c · √I_H before I_H with probability 2(1 − Φ(c)) (the
reflection principle), whenever and however often it is read. So with c = Φ⁻¹(1 − α / 2),

    radius = c · V / √V_H,    i.e. c standard errors at the horizon, c / √τ before,

where τ = V_H / V is the share of the horizon's information in hand: the O'Brien–Fleming
boundary for continuous monitoring (Lan and DeMets, 1983, spend α by τ as its spending
function 2 − 2Φ(z / √τ) does). Read once, at the horizon, it is Φ⁻¹(1 − α/2) standard errors
against Φ⁻¹(1 − α) for a single look: that is the whole price of looking after every label.
A variance read from few human scores widens it by the ratio of the t quantile to the normal
one at its degrees of freedom (the significance-level approach, Jennison and Turnbull,
§11.5); below `MIN_DF` there is no sequence.

"This cell is best" is a comparison **with the best** (Hsu, 1996, ch. 4): the leader is
**decided** when every other cell's sequence lies below it, each one-sided at α / (C − 1). If
a cell B is truly best (or tied for best), naming any other cell A means that the sequence of
B − A, whose truth is ≥ 0, lay wholly below 0: a one-sided error of one of the C − 1
comparisons that involve B, whichever cell leads when; their errors add up to at most α. Both
ends of a sequence shown hold at that level each.

Collecting more runs into an experiment moves its horizon: the sequences then widen (V_H
falls). Looks before the move were made at the old horizon, so an experiment that doubles
its grid late in the judging may err up to twice as often; collect the grid before judging.

A comparison has a sequence only when both cells have human scores on at least as many
scenarios as a paired test needs to reach p < α (`pairs_needed`: 6 at 0.05), the same rule
as the other tiers', and its variance never goes below the floor (`stats._floor`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.stats._estimate import ALPHA, Estimate
from tipbench.stats._judged import Judged, Sample
from tipbench.stats._paired import Difference, PairPool, differences, pool_pairs
from tipbench.stats._ppi import Estimates
from tipbench.stats._sign_flip import pairs_needed

__all__ = [
    "MIN_DF",
    "LeaderDecision",
    "Sequences",
    "cell_scenarios",
    "comparable_cells",
    "decide_leader",
    "horizon_boundary",
    "scenarios_needed",
    "sequence_estimate",
    "sequence_radius",
    "sequences",
    "small_sample_factor",
    "smallest_gap",
]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
MIN_DF = 2
"""Degrees of freedom (human-scored units of each cell, minus one) a sequence needs."""


SLOPE = 1.0
"""κ: how much higher the boundary stands at the start than at the horizon, in standard
errors of the horizon (``c + κ (1 − τ)``)."""


@functools.cache
def _boundary(alpha: float) -> float:
    from scipy.optimize import brentq
    from scipy.special import ndtr

    def crossing(c: float) -> float:
        return float(
            ndtr(-c) + math.exp(2.0 * SLOPE * (c + SLOPE)) * ndtr(-(c + 2.0 * SLOPE)) - alpha
        )

    return float(brentq(crossing, 0.0, 12.0, xtol=1e-12))


def horizon_boundary(alpha: float | _Float) -> _Float:
    """c such that a Brownian motion W on [0, 1] crosses ``c + κ (1 − τ)`` with probability
    ``alpha`` (one-sided): ``Φ(−c) + exp(2κ(c + κ)) Φ(−c − 2κ) = α``, the first passage of a
    linear boundary (Bachelier–Lévy; Siegmund, 1985, eq. 3.15).

    Raises:
        ValueError: If an ``alpha`` is not strictly between 0 and 1.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if np.any((alpha <= 0.0) | (alpha >= 1.0)):
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    levels, index = np.unique(alpha, return_inverse=True)
    found = np.asarray([_boundary(float(level)) for level in levels], dtype=np.float64)
    out: _Float = found[index].reshape(alpha.shape)
    return out


def sequence_estimate(mean: float, low: float, high: float, alpha: float, n: int = 0) -> Estimate:
    """One pair's confidence sequence as the `Estimate` every result and JSON shows: method
    "sequence", each end wrong with probability ``alpha`` over every look (so the two ends
    together hold at 1 − 2α); infinite ends while the pair has none."""
    return Estimate(float(mean), float(low), float(high), "sequence", n=n, confidence=1 - 2 * alpha)


def sequence_radius(variance: _Float, horizon_variance: _Float, alpha: float | _Float) -> _Float:
    """Half the width of the sequence of an estimate with this variance, one side at ``alpha``.

    Args:
        variance: The estimate's variance now.
        horizon_variance: Its variance once every run is judged (at most ``variance``; a
            larger one counts as reached).
        alpha: The error probability of each end over every look up to the horizon.

    Returns:
        ``c · V / √V_H`` (`horizon_boundary`); infinite where a variance is 0 or not a
        number (no spread seen is no evidence: inconclusive, never certain).
    """
    usable = (variance > 0) & (horizon_variance > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        reached = np.minimum(horizon_variance, variance)
        share = reached / variance  # τ, the share of the horizon's information in hand
        boundary = horizon_boundary(alpha) + SLOPE * (1.0 - share)
        radius = boundary * variance / np.sqrt(reached)
    return np.where(usable & np.isfinite(radius), radius, np.inf)


def small_sample_factor(df: _Float, alpha: float | _Float) -> _Float:
    """How much wider the sequence is for a variance read from few human scores: the t
    quantile over the normal one at the boundary's level (1 with many; none below `MIN_DF`)."""
    from scipy.special import ndtri, stdtrit

    alpha = np.asarray(alpha, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        factor: _Float = stdtrit(df, 1.0 - alpha / 2.0) / ndtri(1.0 - alpha / 2.0)
    return np.where(df >= MIN_DF, factor, np.inf)


@dataclass(frozen=True)
class Sequences:
    """Confidence sequences of pairs of cells (arrays of length P).

    Attributes:
        pair: The differences (``mean`` is cell b minus cell a).
        low: Lower end of each pair's sequence (-inf while it has none).
        high: Upper end (+inf while it has none).
        ready: The pair has a sequence: both cells have human scores on at least
            ``needed`` scenarios, and enough degrees of freedom for a variance.
        alpha: The level each pair's sequence was made at.
    """

    pair: Difference
    low: _Float
    high: _Float
    ready: npt.NDArray[np.bool_]
    alpha: _Float


def scenarios_needed(alpha: float) -> int:
    """Human-judged scenarios a cell needs before it counts: as many as a paired test needs
    to be able to reach p < α (6 at 0.05), in every tier."""
    return pairs_needed(alpha)


def sequences(
    judged: Judged,
    sample: Sample,
    estimates: Estimates,
    a: npt.NDArray[np.intp],
    b: npt.NDArray[np.intp],
    alpha: _Float,
    needed: int,
    pool: PairPool | None = None,
) -> Sequences:
    """The confidence sequence of cell b minus cell a for each pair, each end at ``alpha``,
    its variance at least the leaderboard's pooled one (``pool``, default `pool_pairs` of
    the comparable cells)."""
    if pool is None:
        pool = pool_pairs(judged, sample, estimates, comparable_cells(judged, needed))
    pair = differences(judged, sample, estimates, a, b).pooled_with(pool, judged.pool[a])
    radius = sequence_radius(pair.variance, pair.horizon_variance, alpha)
    radius = radius * small_sample_factor(pair.df, alpha)
    covered = np.minimum(estimates.n_human_scenarios[a], estimates.n_human_scenarios[b])
    ready = (pair.df >= MIN_DF) & (covered >= needed) & np.isfinite(radius)
    radius = np.where(ready, radius, np.inf)
    return Sequences(pair, pair.mean - radius, pair.mean + radius, ready, alpha)


def cell_scenarios(judged: Judged) -> _Int:
    """(C,) the scenarios each cell's runs cover."""
    s = judged.n_scenarios
    found = np.unique(judged.cell * s + judged.scenario) // s
    out: _Int = np.bincount(found, minlength=judged.n_cells).astype(np.intp)
    return out


@dataclass(frozen=True)
class LeaderDecision:
    """Per pool (leaderboard): its leader, and whether the sequences have decided it.

    Attributes:
        leader: (P,) the comparable cell with the highest estimate (-1: a comparable cell
            has no estimate yet, or none is comparable).
        decided: (P,) every other comparable cell's sequence lies below the leader.
        comparisons: Every (leader, other comparable cell) pair: ``mean`` is other minus
            leader.
        low: Lower end of each pair's confidence sequence.
        high: Upper end.
        ready: Each pair has a sequence (enough human-judged scenarios on both sides).
        alpha: The level of each end of each pair's sequence (α / (C − 1)).
        comparable: (C,) the cell's runs cover enough scenarios to be compared at all; the
            others are set aside (a cell short of scenarios never blocks the rest).
        needed: Human-judged scenarios a cell needs for a sequence.
    """

    leader: _Int
    decided: npt.NDArray[np.bool_]
    comparisons: Difference
    low: _Float
    high: _Float
    ready: npt.NDArray[np.bool_]
    alpha: _Float
    comparable: npt.NDArray[np.bool_]
    needed: int = 6


def comparable_cells(judged: Judged, needed: int) -> npt.NDArray[np.bool_]:
    """(C,) the cells whose runs (judged or not) cover at least ``needed`` scenarios: only
    they can ever have a sequence; the rest are set aside."""
    out: npt.NDArray[np.bool_] = (judged.scenario_weights() > 0).sum(axis=1) >= needed
    return out


def decide_leader(
    judged: Judged,
    sample: Sample,
    estimates: Estimates,
    alpha: float = ALPHA,
) -> LeaderDecision:
    """Whether each pool's leader is decided by the sequences (see the module's description).

    Only comparable cells (`comparable_cells`) take part; among them the leader is the
    highest estimate once every one of them has an estimate.

    Args:
        judged: The units.
        sample: The human scores used.
        estimates: `estimate(judged, sample)`.
        alpha: The chance, over all looks, of naming a leader that is not the best
            comparable cell.
    """
    pools, cells = judged.n_pools, judged.n_cells
    needed = scenarios_needed(alpha)
    comparable = comparable_cells(judged, needed)
    known = np.isfinite(estimates.variance)
    mean = np.where(known & comparable, estimates.mean, -np.inf)
    order = np.lexsort((-mean, judged.pool))  # by pool, then highest mean first
    first = np.ones(cells, dtype=bool)
    first[1:] = judged.pool[order][1:] != judged.pool[order][:-1]
    leader = np.full(pools, -1, dtype=np.intp)
    leader[judged.pool[order][first]] = order[first]
    complete = np.bincount(judged.pool, weights=known & comparable, minlength=pools)
    size = np.bincount(judged.pool, weights=comparable, minlength=pools).astype(np.intp)
    leader = np.where((complete == size) & (size > 0), leader, -1)

    others = np.flatnonzero((leader[judged.pool] != np.arange(cells)) & comparable)
    others = others[leader[judged.pool[others]] >= 0]
    a = leader[judged.pool[others]]
    per_pair_alpha = alpha / np.maximum(size[judged.pool[others]] - 1, 1)
    pool = pool_pairs(judged, sample, estimates, comparable)
    seq = sequences(judged, sample, estimates, a, others, per_pair_alpha, needed, pool)
    below = seq.ready & (seq.high < 0)
    settled = np.bincount(judged.pool[others], weights=below, minlength=pools)
    decided = (leader >= 0) & (settled == size - 1)
    return LeaderDecision(
        leader,
        decided,
        seq.pair,
        seq.low,
        seq.high,
        seq.ready,
        per_pair_alpha,
        comparable,
        needed,
    )


def smallest_gap(
    n_scenarios: int, n_cells: int, spread: float, alpha: float = ALPHA, power: float = 0.8
) -> float:
    """The smallest true gap between the best cell and the next that the sequences decide in
    ``power`` of experiments once every run is judged: ``(c · f + t_power) · spread / √S``,
    with c the boundary at the horizon at α / (C − 1), f its allowance for a variance pooled
    over the C cells' pairs ((C − 1)(S − 1) degrees of freedom) and t_power the t quantile at
    ``power`` (NaN below two cells or `MIN_DF` + 1 scenarios).

    Args:
        n_scenarios: S, the scenarios every cell runs on.
        n_cells: C, the cells compared.
        spread: The standard deviation of one scenario's difference between two cells.
        alpha: The gate's level.
        power: The share of experiments that should find the gap.
    """
    from scipy.special import stdtrit

    if n_cells < 2 or n_scenarios <= MIN_DF:
        return math.nan
    df = np.asarray([(n_cells - 1) * (n_scenarios - 1)], dtype=np.float64)
    each = alpha / (n_cells - 1)
    boundary = float(horizon_boundary(each)) * float(small_sample_factor(df, each)[0])
    return (boundary + float(stdtrit(df[0], power))) * spread / math.sqrt(n_scenarios)
