"""Judging in the order that decides: which run a human should score next.

Two choices make the order, and only the second looks at the scores so far:

- **within a cell**, its open runs wait in a queue drawn once, at random: each run's place
  comes from an exponential clock ``E / rate`` (successive sampling without replacement,
  each next run drawn with probability proportional to its rate). The rate is
  ``1 + uncertainty``: runs on which the automatic judge was least sure (for example had
  to be asked again) tend to come first. The first k runs of a queue are then a sample
  with known inclusion probabilities (`queue_inclusion`): k / M when all rates are equal,
  else ``1 − exp(−rate · t)`` with t such that they add up to k (Rosén's order sampling).
  The estimate weighs each score by the inverse (`stats._ppi`), so it stays unbiased
  whichever runs come first.
- **across cells** (`next_cells`): a cell without a human score in its queue first (there
  is no leader before every cell has an estimate); then a cell whose human scores cover
  fewer scenarios than a comparison needs (the fewest first: no comparison can settle
  before); then, of the comparisons with the leader not settled yet, the one whose
  confidence sequence is widest against the gap it must clear, and of its two cells the
  one whose sampling leaves the most doubt. A cell's queue is served
  from its front, so the choice of cell never picks runs by their scores.

A uniform order (``--order uniform``) serves all open runs in one shuffled queue instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tipbench.stats import Estimates, Judged, LeaderDecision, sequence_radius, small_sample_factor

__all__ = ["inclusion_by_turn", "next_cells", "queue_clocks", "queue_inclusion"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_Bool = npt.NDArray[np.bool_]
_UNKNOWN = 1e6  # stands for an infinite radius or allowance when ranking comparisons


def queue_clocks(rates: _Float, rng: np.random.Generator) -> _Float:
    """Each run's clock: runs are served in increasing clock order within their cell.

    Equal rates give a uniformly shuffled queue; a run with twice the rate tends to come
    twice as early. Rates must be positive.
    """
    rates = np.asarray(rates, dtype=np.float64)
    if np.any(~(rates > 0)):
        raise ValueError("every run needs a positive rate")
    out: _Float = rng.exponential(size=len(rates)) / rates
    return out


def queue_inclusion(
    cell: _Int, rates: _Float, clocks: _Float, scored: _Bool
) -> tuple[_Int, _Float]:
    """The usable sample of every cell's queue and each sampled unit's inclusion probability.

    A cell's sample is its queue's longest scored prefix (a run scored out of turn waits
    until the runs before it are scored: skipping by content would bias the estimate).

    Args:
        cell: (U,) each open unit's cell (units that stand for themselves are left out).
        rates: (U,) each unit's rate; clocks: (U,) its clock (`queue_clocks`).
        scored: (U,) whether a human has scored it.

    Returns:
        The indices (into the arguments) of the sampled units, and their probabilities.
    """
    n = len(cell)
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    order = np.lexsort((clocks, cell))
    c_sorted = cell[order]
    starts = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    sizes = np.diff(np.r_[starts, n])
    group = np.repeat(np.arange(len(starts)), sizes)
    position = np.arange(n) - starts[group]
    open_position = np.where(~scored[order], position, n)
    first_open = np.minimum.reduceat(open_position, starts)  # k: the scored prefix
    k = first_open[group]
    in_sample = position < k
    all_scored = first_open >= sizes
    time = _order_time(rates[order], starts, group, np.minimum(first_open, sizes))
    pi = -np.expm1(-rates[order] * time[group])
    pi = np.where(all_scored[group], 1.0, pi)
    sampled = order[in_sample]
    return sampled, pi[in_sample]


def inclusion_by_turn(rates: _Float) -> _Float:
    """For one cell's queue (rates in queue order): each run's inclusion probability once the
    queue is scored up to it, the j-th run (from 1) with j scored. What a judge file records
    per item (`queue_inclusion` gives the same figure for the scored prefix)."""
    m = len(rates)
    if m == 0:
        return np.zeros(0)
    k = np.arange(1, m + 1)
    repeated = np.tile(np.asarray(rates, dtype=np.float64), m)
    starts = np.arange(m) * m
    time = _order_time(repeated, starts, np.repeat(np.arange(m), m), k)
    out: _Float = np.where(k == m, 1.0, -np.expm1(-np.asarray(rates) * time))
    return out


def _order_time(rates: _Float, starts: _Int, group: _Int, k: _Int) -> _Float:
    """Per queue, the time t at which ``Σ (1 − exp(−rate · t)) = k`` (Newton's method).

    Rosén's order sampling: the first k runs of a queue ordered by exponential clocks
    were each included with probability ``1 − exp(−rate · t)`` (to first order; exactly
    k / M for equal rates, where this is simple random sampling).
    """
    sizes = np.diff(np.r_[starts, len(rates)]).astype(np.float64)
    share = np.clip(k / sizes, 0.0, 1.0 - 1e-12)
    mean_rate = np.add.reduceat(rates, starts) / sizes
    t = -np.log1p(-share) / mean_rate  # exact when the rates are equal
    for _ in range(30):
        e = np.exp(-rates * t[group])
        excess = np.add.reduceat(1.0 - e, starts) - k
        slope = np.add.reduceat(rates * e, starts)
        step = excess / np.maximum(slope, 1e-300)
        t = np.maximum(t - step, t / 10.0)
        if np.all(np.abs(excess) < 1e-10):
            break
    out: _Float = t
    return out


def next_cells(
    judged: Judged,
    estimates: Estimates,
    decision: LeaderDecision,
    open_units: _Int,
) -> _Int:
    """Per pool (leaderboard), the cell whose queue should serve the next run (-1: none open).

    In this order: a cell without a human score (the first); a cell whose human scores
    cover too few scenarios (the fewest); the side of the least settled comparison with
    the leader; once decided, the open cell with the widest interval. Every pool at once.

    Args:
        judged: The units.
        estimates: The current estimates.
        decision: The current comparisons with the leader.
        open_units: (C,) each cell's runs not scored yet.
    """
    pools, cells = judged.n_pools, np.arange(judged.n_cells)
    has_open = (open_units > 0) & decision.comparable  # a cell set aside can wait
    covered = estimates.n_human_scenarios
    empty = (estimates.n_sampled == 0) & has_open
    short = (covered < decision.needed) & has_open
    out = _best(judged.pool, empty, cells, pools)
    out = np.where(out >= 0, out, _best(judged.pool, short, covered, pools))
    out = np.where(out >= 0, out, _from_comparisons(judged, estimates, decision, has_open))
    widest = -np.nan_to_num(estimates.variance)
    return np.where(out >= 0, out, _best(judged.pool, has_open, widest, pools))


def _best(group: _Int, mask: _Bool, key: _Float | _Int, size: int) -> _Int:
    """Per group, the index with the smallest ``key`` where ``mask`` holds (the first of
    equals; -1: none)."""
    index = np.flatnonzero(mask)
    out = np.full(size, -1, dtype=np.intp)
    if not len(index):
        return out
    order = index[np.lexsort((index, key[index], group[index]))]
    first = np.r_[True, group[order][1:] != group[order][:-1]]
    out[group[order][first]] = order[first]
    return out


def _from_comparisons(
    judged: Judged,
    estimates: Estimates,
    decision: LeaderDecision,
    has_open: _Bool,
) -> _Int:
    """Per pool, the cell to serve for its least settled comparison with the leader (-1: all
    settled)."""
    pair = decision.comparisons
    radius = sequence_radius(pair.variance, pair.horizon_variance, decision.alpha)
    radius = np.where(np.isfinite(radius), radius, _UNKNOWN)
    # The sequence's allowance for few scores counts too (a score anywhere shrinks it, one
    # on the least settled comparison shrinks its radius as well); while no sequence exists
    # yet, comparisons rank by their radius alone.
    allowance = small_sample_factor(pair.df, decision.alpha)
    allowance = np.where(np.isfinite(allowance), allowance, _UNKNOWN)
    gap = np.maximum(-pair.mean, 1e-9)
    settled = decision.ready & (decision.high < 0)
    open_pairs = ~settled & (has_open[pair.a] | has_open[pair.b])
    need = np.nan_to_num(radius * allowance / gap, nan=_UNKNOWN)
    worst = _best(judged.pool[pair.b], open_pairs, -need, judged.n_pools)
    chosen = np.full(judged.n_pools, -1, dtype=np.intp)
    found = worst >= 0
    a, b = pair.a[worst[found]], pair.b[worst[found]]

    def doubt(cell: _Int) -> _Float:
        sampling = np.nan_to_num(estimates.sampling_variance[cell], nan=np.inf)
        return np.where(has_open[cell], sampling, -np.inf)

    chosen[found] = np.where(doubt(b) > doubt(a), b, a)
    return chosen
