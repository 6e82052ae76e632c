"""One step of the judging loop, on arrays: what the combined tier knows, and what comes next.

The judging page, `judge export`, `compare`, the API and the promotion gate read an
experiment through `snapshot` (the usable sample of every cell's queue, the estimates and
the anytime-valid decision) and serve its next run through `next_units`. Both work on any
number of leaderboards at once (one λ pool each), so the simulations that prove the
statistics (`tests/judging/test_simulations.py`, `bench/labels_to_decision.py`) drive this very
loop on hundreds of simulated experiments, a label at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from tipbench.judging._active import next_cells, queue_inclusion
from tipbench.stats import Estimates, Judged, LeaderDecision, Sample, decide_leader, estimate

__all__ = ["Queues", "Snapshot", "next_units", "snapshot"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Queues:
    """Every unit's place in the judging order (`judging._order`), as arrays.

    Attributes:
        kind: "active" (the cell to serve chosen by the open comparisons) or "uniform"
            (every open run of a leaderboard in one shuffled queue).
        rates: (U,) each unit's rate (1, or 1 + the judge's uncertainty).
        clocks: (U,) each unit's clock: within a cell, runs are served by increasing clock.
    """

    kind: Literal["active", "uniform"]
    rates: _Float
    clocks: _Float


@dataclass(frozen=True)
class Snapshot:
    """What the combined tier knows now, per leaderboard."""

    sample: Sample
    estimates: Estimates
    decision: LeaderDecision
    open_units: _Int  # (C,) runs not scored yet, outside ``known``


def snapshot(
    judged: Judged, queues: Queues | None, alpha: float, *, use_judge: bool = True
) -> Snapshot:
    """The usable sample (each cell's queue's scored prefix, with its inclusion
    probabilities), the estimates and the decision. Without queues (no judging order) no
    human score outside ``known`` is usable."""
    scored = ~np.isnan(judged.human)
    open_ = np.flatnonzero(~judged.known)
    if queues is None:
        sample = Sample.none()
    else:
        picked, inclusion = queue_inclusion(
            judged.cell[open_], queues.rates[open_], queues.clocks[open_], scored[open_]
        )
        sample = Sample(open_[picked], inclusion)
    estimates = estimate(judged, sample, use_judge=use_judge)
    decision = decide_leader(judged, sample, estimates, alpha)
    unscored = np.bincount(judged.cell[~judged.known & ~scored], minlength=judged.n_cells)
    return Snapshot(sample, estimates, decision, unscored.astype(np.intp))


def next_units(judged: Judged, queues: Queues, now: Snapshot | None = None) -> _Int:
    """Per leaderboard, the unit a human should score next (-1: none waits).

    Uniform order: the unscored run with the smallest clock. Active order: the front of
    the queue of the cell `next_cells` picks from the comparisons as they are now (the
    smallest clock of that cell's unscored runs), else the uniform choice (which is also
    what it does without a snapshot `now`).
    """
    waiting = ~judged.known & np.isnan(judged.human)
    pools = judged.pool[judged.cell]
    by_pool = _front(pools, queues.clocks, waiting, judged.n_pools)
    if queues.kind == "uniform" or now is None:
        return by_pool
    by_cell = _front(judged.cell, queues.clocks, waiting, judged.n_cells)
    chosen = next_cells(judged, now.estimates, now.decision, now.open_units)
    picked = np.where(chosen >= 0, by_cell[np.maximum(chosen, 0)], -1)
    return np.where(picked >= 0, picked, by_pool)


def _front(group: _Int, clocks: _Float, waiting: npt.NDArray[np.bool_], size: int) -> _Int:
    """Per group, the waiting unit with the smallest clock (-1: none)."""
    units = np.flatnonzero(waiting)
    out = np.full(size, -1, dtype=np.intp)
    if not len(units):
        return out
    order = units[np.lexsort((clocks[units], group[units]))]
    first = np.r_[True, group[order][1:] != group[order][:-1]]
    out[group[order][first]] = order[first]
    return out
