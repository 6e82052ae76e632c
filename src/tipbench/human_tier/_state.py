"""An experiment's runs as the judging loop sees them: units, sample, estimates, decision.

`combined_state` turns an experiment's judgeable cell runs and its judging order
(`human_tier._order`) into the arrays of `stats._ppi` (one unit per run, the composite's
human and automatic scores, the runs a human scored before the order as ``known``) and takes
one `snapshot` of the loop (`human_tier._loop`). `judging_state` does the same from the
store, starting an order if asked. What the judging page serves, what a judge file lists,
what the judging status says and the combined tier's leaderboard all read this state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tipbench.human_tier._loop import Queues, snapshot
from tipbench.human_tier._order import JudgingOrder, Order, current_order, ensure_order
from tipbench.stats import (
    ALPHA,
    Estimates,
    Judged,
    LeaderDecision,
    Sample,
    estimate,
    resolution_variance,
)
from tipbench.suite import CRITERIA
from tipbench.tracking import CellRun, metric_name

if TYPE_CHECKING:
    from tipbench.tracking import TrackingStore

__all__ = ["CombinedState", "combined_state", "judging_state", "score_floor"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]


@dataclass(frozen=True)
class CombinedState:
    """An experiment's runs as the combined tier sees them: units, sample, estimates.

    Attributes:
        cells: (model, prompt) of each cell, in index order.
        runs: The judgeable runs, in unit order.
        judged: The composite's units (per-criterion ones differ only in their scores).
        sample: The human scores the estimates may use.
        estimates: The composite's estimates per cell.
        decision: The anytime-valid comparisons with the leader.
        order: The judging order (None: none began).
        queues: Its arrays (every unit's rate and clock), None without an order.
        open_units: (C,) each cell's runs no human has scored, outside ``known``.
        sampled: (C,) each cell's runs in its queue's scored prefix.
        unused: Human-scored runs outside every queue's scored prefix.
    """

    cells: tuple[tuple[str, str], ...]
    runs: tuple[CellRun, ...]
    judged: Judged
    sample: Sample
    estimates: Estimates
    decision: LeaderDecision
    order: JudgingOrder | None
    open_units: _Int
    sampled: _Int
    unused: int
    queues: Queues | None = None

    def column(self, name: str) -> tuple[Judged, Estimates]:
        """The units and estimates of one score column: the composite, a criterion or a flag."""
        judged = _with_scores(self.judged, self.runs, name)
        return judged, estimate(judged, self.sample)


def _scores(runs: Sequence[CellRun], tier: str, column: str) -> _Float:
    key = column if tier == "human" else metric_name("auto", column)
    return np.asarray([run.metrics.get(key, math.nan) for run in runs], dtype=np.float64)


def _with_scores(judged: Judged, runs: Sequence[CellRun], column: str) -> Judged:
    return Judged(
        cell=judged.cell,
        scenario=judged.scenario,
        weight=judged.weight,
        auto=_scores(runs, "auto", column),
        human=np.where(judged.known | _human_judged(runs), _scores(runs, "human", column), np.nan),
        known=judged.known,
        pool=judged.pool,
        floor=score_floor(column),
    )


def score_floor(column: str) -> float:
    """The variance floor of a scenario value in `column` (`stats.resolution_variance`): the
    composite adds up the rubric's integer criteria; a criterion, or a flag, is one."""
    return resolution_variance(len(CRITERIA) if column == "composite" else 1)


def _human_judged(runs: Sequence[CellRun]) -> npt.NDArray[np.bool_]:
    return np.asarray(["composite" in run.metrics for run in runs], dtype=bool)


def combined_state(runs: Sequence[CellRun], order: JudgingOrder | None) -> CombinedState:
    """The combined tier's view of an experiment's judgeable runs under its judging order.

    Without an order no human score is usable (every run counts as unscored).
    """
    runs = tuple(run for run in runs if run.ok)
    cells: dict[tuple[str, str], int] = {}
    scenarios: dict[str, int] = {}
    cell = np.asarray(
        [cells.setdefault((r.model, r.prompt_version), len(cells)) for r in runs], dtype=np.intp
    )
    scenario = np.asarray(
        [scenarios.setdefault(r.scenario_key, len(scenarios)) for r in runs], dtype=np.intp
    )
    scored = _human_judged(runs)
    known = (
        np.asarray([order is not None and r.run_id in order.known for r in runs], dtype=bool)
        & scored
    )
    judged = Judged.build(
        cell,
        scenario,
        _scores(runs, "auto", "composite"),
        np.where(scored, _scores(runs, "human", "composite"), np.nan),
        known,
        np.zeros(len(cells), dtype=np.intp),
        score_floor("composite"),
    )
    queues = None
    if order is not None:
        strata: dict[str, int] = {"": 0}
        queues = Queues(
            order.kind,
            np.asarray([order.rate(r.run_id) for r in runs], dtype=np.float64),
            np.asarray([order.clock(r.run_id) for r in runs], dtype=np.float64),
            np.asarray(
                [strata.setdefault(order.stratum(r), len(strata)) for r in runs], dtype=np.intp
            ),
        )
    now = snapshot(judged, queues, ALPHA)
    units = now.sample.unit
    return CombinedState(
        cells=tuple(cells),
        runs=runs,
        judged=judged,
        sample=now.sample,
        estimates=now.estimates,
        decision=now.decision,
        order=order,
        open_units=now.open_units,
        sampled=np.bincount(cell[units], minlength=len(cells)),
        unused=int(np.count_nonzero(scored & ~known)) - len(units),
        queues=queues,
    )


def judging_state(
    store: TrackingStore, experiment: str, kind: Order | None = None, *, start: bool = True
) -> CombinedState:
    """An experiment's runs under its judging order, as the combined tier sees them: what
    orders a judge file (`serving_order`), picks the page's next run (`next_run`) and says
    how the judging stands (`judging_status`). One search of the runs.

    Args:
        store: The MLflow store.
        experiment: The experiment's name.
        kind: The order wanted (a new one starts if the current one is of the other kind);
            default: the current one, else an active one.
        start: Start an order if there is none (else: none, and no human score is usable).

    Raises:
        TrackingError: If the experiment cannot be read or an order not recorded.
    """
    experiment_id = store.experiment_id(experiment)
    runs = store.cell_runs(experiment_id, judgeable=True)
    order = (
        ensure_order(store, experiment_id, runs, kind)
        if start
        else current_order(store, experiment_id)
    )
    return combined_state(runs, order)
