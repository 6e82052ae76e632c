"""One step of the judging loop, on arrays: what the combined tier knows, and what comes next.

The judging page, `judge export`, `compare`, the API and the promotion gate read an
experiment through `snapshot` (the usable sample of every cell's queue, the estimates and
the anytime-valid decision) and serve its next run through `next_units`. Both work on any
number of leaderboards at once (one λ pool each), so the simulations that prove the
statistics (`tests/human_tier/test_simulations.py`, `bench/labels_to_decision.py`) drive this very
loop on hundreds of simulated experiments, a label at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from tipbench.human_tier._active import next_cells, queue_inclusion
from tipbench.stats import Estimates, Judged, LeaderDecision, Sample, decide_leader, estimate

__all__ = ["Queues", "Snapshot", "next_units", "snapshot"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Queues:
    """Every unit's place in the judging order (`human_tier._order`), as arrays.

    Attributes:
        kind: "active" (the cell to serve chosen by the open comparisons) or "uniform"
            (every open run of a leaderboard in one shuffled queue).
        rates: (U,) each unit's rate (1, or 1 + the judge's uncertainty).
        clocks: (U,) each unit's clock: within a cell's stratum, runs are served by
            increasing clock.
        stratum: (U,) each unit's stratum, 0 .. H-1 (None: one). Runs collected after the
            judging began form a stratum of their own, with queues of their own, so that a
            prefix scored before they came stays a prefix (`human_tier._order`).
    """

    kind: Literal["active", "uniform"]
    rates: _Float
    clocks: _Float
    stratum: _Int | None = None

    def queue(self, judged: Judged) -> _Int:
        """(U,) each unit's queue: its cell within its stratum."""
        if self.stratum is None:
            return judged.cell
        out: _Int = self.stratum * judged.n_cells + judged.cell
        return out

    def shares(self, judged: Judged, group: _Int) -> _Float:
        """(U,) the scored share of each unit's stratum within its group (its cell, or its
        pool): the stratum with the least share is served first (proportional allocation,
        decided by counts alone, never by scores)."""
        stratum = np.zeros(len(group), dtype=np.intp) if self.stratum is None else self.stratum
        lane = group * (int(stratum.max(initial=0)) + 1) + stratum
        open_ = ~judged.known
        scored = open_ & ~np.isnan(judged.human)
        size = int(lane.max(initial=-1)) + 1
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.bincount(lane, scored, size) / np.bincount(lane, open_, size)
        out: _Float = share[lane]
        return out


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
            queues.queue(judged)[open_], queues.rates[open_], queues.clocks[open_], scored[open_]
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
    what it does without a snapshot `now`). With strata, within a cell (or a leaderboard)
    the stratum with the least share scored goes first.
    """
    waiting = ~judged.known & np.isnan(judged.human)
    pools = judged.pool[judged.cell]
    by_pool = _front(pools, waiting, judged.n_pools, queues, judged)
    if queues.kind == "uniform" or now is None:
        return by_pool
    by_cell = _front(judged.cell, waiting, judged.n_cells, queues, judged)
    chosen = next_cells(judged, now.estimates, now.decision, now.open_units)
    picked = np.where(chosen >= 0, by_cell[np.maximum(chosen, 0)], -1)
    return np.where(picked >= 0, picked, by_pool)


def _front(
    group: _Int, waiting: npt.NDArray[np.bool_], size: int, queues: Queues, judged: Judged
) -> _Int:
    """Per group, the waiting unit with the smallest clock in the stratum with the least
    share scored (-1: none)."""
    units = np.flatnonzero(waiting)
    out = np.full(size, -1, dtype=np.intp)
    if not len(units):
        return out
    clocks = queues.clocks[units]
    if queues.stratum is None:
        order = units[np.lexsort((clocks, group[units]))]
    else:
        shares = queues.shares(judged, group)[units]
        order = units[np.lexsort((clocks, queues.stratum[units], shares, group[units]))]
    first = np.r_[True, group[order][1:] != group[order][:-1]]
    out[group[order][first]] = order[first]
    return out
