"""Anytime-valid comparisons with the leader: look after every judgement, err at most α.

A 95% interval is right 95% of the time when it is read once; a judge who reads it after
every save and stops the first time it excludes 0 is wrong far more often. A confidence
sequence holds at every look at once (Howard, Ramdas, McAuliffe and Sekhon, 2021): for the
difference between a cell and the leader,

    estimate ± σ · u(n) / n,    u(n) = √((n + ρ) · log((n + ρ) / (ρ α²)))

where n is the effective number of scenarios the estimate rests on (σ² / its variance), σ²
the variance of one scenario's difference, and u the two-sided normal-mixture boundary
(the same as `confseq.boundaries.normal_mixture_bound`), tuned by ρ to be tightest at
``n_opt`` scenarios. Its validity is asymptotic (the estimates behave as a Brownian motion in
their information, Waudby-Smith et al., 2024); below `MIN_DF` degrees of freedom no
sequence is given.

The leader is **decided** when every other cell's sequence lies below it. Each of the C - 1
comparisons gets α / (C - 1), so the chance of ever naming a leader that is not the best
cell stays below α however often one looks: if a cell B is truly best (or tied for best),
naming any other cell A means that the sequence of A − B, whose truth is ≤ 0, lay above 0;
only the C - 1 sequences that involve B can do that, whichever cell leads when.

A comparison has a sequence only when both cells have human scores on at least as many
scenarios as a paired test needs to reach p < α (`pairs_needed`: 6 at 0.05), the same rule
as the other tiers', and its variance never goes below the floor (`stats._floor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.stats._estimate import ALPHA
from tipbench.stats._judged import Judged, Sample
from tipbench.stats._paired import Difference, differences
from tipbench.stats._ppi import Estimates
from tipbench.stats._sign_flip import pairs_needed

__all__ = [
    "MIN_DF",
    "LeaderDecision",
    "Sequences",
    "cell_scenarios",
    "decide_leader",
    "normal_mixture_bound",
    "scenario_count",
    "scenarios_needed",
    "sequence_radius",
    "sequences",
    "small_sample_factor",
]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
MIN_DF = 2
"""Degrees of freedom (human-scored units of each cell, minus one) a sequence needs."""


def _best_rho(n_opt: float, alpha: _Float) -> _Float:
    """The mixture's ρ that makes the boundary tightest at ``n_opt`` (Howard et al., eq. 15)."""
    log_inv = np.log(1.0 / alpha)
    rho: _Float = n_opt / (2.0 * log_inv + np.log(1.0 + 2.0 * log_inv))
    return rho


def normal_mixture_bound(v: _Float, alpha: float | _Float, v_opt: float) -> _Float:
    """The two-sided normal-mixture uniform boundary at intrinsic time ``v``.

    A martingale with variance process V crosses ±u(V) with probability at most ``alpha``
    (in the limit of many small steps); ``v_opt`` is where the boundary is tightest.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if np.any((alpha <= 0.0) | (alpha >= 1.0)):
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    rho = _best_rho(v_opt, alpha)
    v = np.asarray(v, dtype=np.float64)
    out: _Float = np.sqrt((v + rho) * np.log((v + rho) / (rho * alpha * alpha)))
    return out


def sequence_radius(
    variance: _Float, unit_variance: _Float, alpha: float | _Float, n_opt: float
) -> _Float:
    """Half the width of the confidence sequence of an estimate with this variance.

    Args:
        variance: The estimate's variance now.
        unit_variance: The variance of one scenario's value (so that ``unit_variance /
            variance`` is the number of scenarios the estimate is worth).
        alpha: The sequence's error probability over all looks.
        n_opt: The number of scenarios where it is tightest.

    Returns:
        The radius; infinite where a variance is 0 or not a number (no spread seen is no
        evidence: such a comparison is inconclusive, never certain).
    """
    usable = (variance > 0) & (unit_variance > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = unit_variance / variance
        radius = np.sqrt(unit_variance) * normal_mixture_bound(n, alpha, n_opt) / n
    return np.where(usable & np.isfinite(radius), radius, np.inf)


def small_sample_factor(df: _Float, alpha: float | _Float) -> _Float:
    """How much wider a t interval is than a normal one at this level: the sequence's allowance
    for a variance estimated from few human scores (1 with many; none below `MIN_DF`)."""
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
    n_opt: float,
    needed: int,
) -> Sequences:
    """The confidence sequence of cell b minus cell a for each pair, at level ``alpha``."""
    pair = differences(judged, sample, estimates, a, b)
    radius = sequence_radius(pair.variance, pair.unit_variance, alpha, n_opt)
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


def scenario_count(judged: Judged) -> float:
    """The most scenarios any cell has: where the sequences are made tightest."""
    return float(max(int(cell_scenarios(judged).max(initial=0)), 1))


@dataclass(frozen=True)
class LeaderDecision:
    """Per pool (leaderboard): its leader, and whether the sequences have decided it.

    Attributes:
        leader: (P,) the cell with the highest estimate (-1: a cell has no estimate yet).
        decided: (P,) every other cell's sequence lies below the leader.
        comparisons: Every (leader, other) pair: ``mean`` is other minus leader.
        low: Lower end of each pair's confidence sequence.
        high: Upper end.
        ready: Each pair has a sequence (enough human-judged scenarios on both sides).
        alpha: The level each pair's sequence was made at.
        n_opt: Scenarios where the sequences are tightest.
        needed: Human-judged scenarios a cell needs for a sequence.
    """

    leader: _Int
    decided: npt.NDArray[np.bool_]
    comparisons: Difference
    low: _Float
    high: _Float
    ready: npt.NDArray[np.bool_]
    alpha: _Float
    n_opt: float
    needed: int = 6


def decide_leader(
    judged: Judged,
    sample: Sample,
    estimates: Estimates,
    alpha: float = ALPHA,
    n_opt: float | None = None,
) -> LeaderDecision:
    """Whether each pool's leader is decided by anytime-valid sequences (see module doc).

    Args:
        judged: The units.
        sample: The human scores used.
        estimates: `estimate(judged, sample)`.
        alpha: The chance, over all looks, of naming a leader that is not the best cell.
        n_opt: Scenarios where the sequences are tightest [default: a cell's scenarios].
    """
    pools, cells = judged.n_pools, judged.n_cells
    mean = np.where(np.isfinite(estimates.variance), estimates.mean, -np.inf)
    order = np.lexsort((-mean, judged.pool))  # by pool, then highest mean first
    first = np.ones(cells, dtype=bool)
    first[1:] = judged.pool[order][1:] != judged.pool[order][:-1]
    leader = np.full(pools, -1, dtype=np.intp)
    leader[judged.pool[order][first]] = order[first]
    complete = np.bincount(judged.pool, weights=np.isfinite(estimates.variance), minlength=pools)
    size = np.bincount(judged.pool, minlength=pools)
    leader = np.where(complete == size, leader, -1)

    others = np.flatnonzero(leader[judged.pool] != np.arange(cells))
    others = others[leader[judged.pool[others]] >= 0]
    a = leader[judged.pool[others]]
    per_pair_alpha = alpha / np.maximum(size[judged.pool[others]] - 1, 1)
    n_opt = scenario_count(judged) if n_opt is None else n_opt
    needed = scenarios_needed(alpha)
    seq = sequences(judged, sample, estimates, a, others, per_pair_alpha, n_opt, needed)
    below = seq.ready & (seq.high < 0)
    settled = np.bincount(judged.pool[others], weights=below, minlength=pools)
    decided = (leader >= 0) & (settled == size - 1)
    return LeaderDecision(
        leader, decided, seq.pair, seq.low, seq.high, seq.ready, per_pair_alpha, n_opt, needed
    )
