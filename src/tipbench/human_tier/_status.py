"""How the human judging stands, and which run a human should score next.

After each save the judging page says "the leader is decided: you can stop" or "about N
more judgments expected" (`judging_status`). N comes from a plan (`plan`): for each
comparison with the leader not settled, the variance its confidence sequence must reach to
exclude 0 at today's difference; the scenarios' part of that variance stays, the sampling
part shrinks as each cell's queue is scored further (as in a simple random sample, in
proportion to 1/k − 1/M), judgements going to whichever of the pair's two cells it drops
most. The same plan orders a judge file (`serving_order`); the page asks for one run at a
time (`next_run`), which follows the comparisons as they are after every save.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tipbench._words import counted
from tipbench.human_tier._active import inclusion_by_turn
from tipbench.human_tier._anytime import cannot_decide
from tipbench.human_tier._detectable import detectable_gap
from tipbench.human_tier._loop import Snapshot, next_units
from tipbench.stats import (
    ALPHA,
    Difference,
    Estimates,
    LeaderDecision,
    cell_scenarios,
    sequence_radius,
)

if TYPE_CHECKING:
    from tipbench.human_tier._state import CombinedState
    from tipbench.tracking import CellRun

__all__ = [
    "JudgingStatus",
    "Plan",
    "inclusion_at_turn",
    "judging_status",
    "next_run",
    "plan",
    "serving_order",
]

_Int = npt.NDArray[np.intp]


@dataclass(frozen=True)
class JudgingStatus:
    """How the human judging stands for the combined tier.

    Attributes:
        order: The experiment's judging order ("active", "uniform"), None if none began.
        sampling_known: Every human score used was drawn with a known probability (false
            when human scores exist but no order was recorded before them).
        decided: The leader is decided: every other cell's confidence sequence lies below it.
        expected_more: About how many more human judgements the decision needs (None when
            decided, unknown, or out of reach on these scenarios).
        message: What the judging page says after each save.
        unused: Human-scored runs not used yet (scored out of turn: a run before them in
            their cell's queue still waits).
        detectable: The smallest gap the gate can detect on these scenarios, in words.
    """

    order: str | None
    sampling_known: bool
    decided: bool
    expected_more: int | None
    message: str
    unused: int = 0
    detectable: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "sampling_known": self.sampling_known,
            "decided": self.decided,
            "expected_more": self.expected_more,
            "message": self.message,
            "unused": self.unused,
            "detectable": self.detectable,
        }


def judging_status(state: CombinedState) -> JudgingStatus:
    """Whether the leader is decided, about how many more judgements it needs, and what the
    gate can detect on these scenarios (see `_status`)."""
    found = _status(state)
    detectable = detectable_gap(state.judged) if state.cells else None
    if detectable is None or not math.isfinite(detectable.gap):
        return found  # "cannot be decided on 3 scenarios" says it already
    return replace(found, detectable=detectable.describe())


def _status(state: CombinedState) -> JudgingStatus:
    """Whether the leader is decided, and about how many more judgements it needs.

    In this order: the scenarios too few for any decision ("cannot be decided on 3
    scenarios: collect at least 6": no count of judgements would help); decided; cells
    whose human scores cover too few scenarios (at least the judgements that would cover
    them); cells without a score in their queue; else the plan's count.
    """
    order = state.order
    human = bool(np.any(~np.isnan(state.judged.human)))
    kind = order.kind if order is not None else None
    if not state.cells:
        return JudgingStatus(kind, not human, False, None, "no judgeable runs yet")
    too_few = cannot_decide(int(cell_scenarios(state.judged).max(initial=0)), ALPHA)
    if too_few is not None:
        return JudgingStatus(kind, order is not None or not human, False, None, too_few)
    if order is None:
        message = (
            "the human scores' sampling is unknown: they were given before any judging "
            "order (tipbench judge export or the judging page starts one)"
            if human
            else "no judging order yet: tipbench judge export or the judging page starts one"
        )
        return JudgingStatus(None, not human, False, None, message)
    d = state.decision
    if bool(d.decided[0]):
        return JudgingStatus(
            order.kind, True, True, None, "the leader is decided: you can stop", state.unused
        )
    short = _scenarios_short(state)
    if short:
        return JudgingStatus(
            order.kind,
            True,
            False,
            short,
            f"every cell needs human scores on at least {d.needed} scenarios before the "
            f"leader can be decided: at least {counted(short, 'more judgment')} expected",
            state.unused,
        )
    waiting = (state.estimates.n_sampled == 0) & (state.open_units > 0) & d.comparable
    empty = int(np.count_nonzero(waiting))
    if empty:
        return JudgingStatus(
            order.kind,
            True,
            False,
            empty,
            f"every cell needs a human score before the leader can be decided: at least "
            f"{counted(empty, 'more judgment')} expected",
            state.unused,
        )
    more = expected_judgements(state)
    if more is None:
        return JudgingStatus(
            order.kind,
            True,
            False,
            None,
            "the leader cannot be decided on these scenarios: a cell stays within reach "
            "of it even with every run judged",
            state.unused,
        )
    message = f"about {counted(more, 'more judgment')} expected"
    return JudgingStatus(order.kind, True, False, more, message, state.unused)


def _scenarios_short(state: CombinedState) -> int:
    """Human judgements still missing before every cell's human scores cover enough
    scenarios (at least one per scenario short; more where a queue repeats a scenario)."""
    d = state.decision
    short = np.where(d.comparable, np.maximum(d.needed - state.estimates.n_human_scenarios, 0), 0)
    return int(np.minimum(short, state.open_units).sum())


@dataclass(frozen=True)
class Plan:
    """More human judgements per cell that would decide the leader (None: out of reach)."""

    per_cell: _Int | None

    @property
    def total(self) -> int | None:
        return None if self.per_cell is None else int(self.per_cell.sum())


def plan(state: CombinedState) -> Plan:
    """The judgements per cell that would decide the leader at today's differences.

    A cell whose human scores cover too few scenarios needs (at least) one judgement per
    scenario short, and a cell without a human score one first; then, per comparison not
    settled, its two cells get judgements (greedily, to the larger drop of variance) until
    its sequence would exclude 0. The leader's judgements serve every comparison: the most
    any one needs.
    """
    e, d = state.estimates, state.decision
    short = np.where(d.comparable, np.maximum(d.needed - e.n_human_scenarios, 0), 0)
    short = np.minimum(short, state.open_units)
    if short.any():
        return Plan(short.astype(np.intp))
    per_cell = np.zeros(len(state.cells), dtype=np.intp)
    leader = int(d.leader[0]) if len(d.leader) else -1
    if leader < 0:  # some cell has no estimate yet: one score there first
        per_cell[(e.n_sampled == 0) & (state.open_units > 0) & d.comparable] = 1
        if not per_cell.any():  # too few scores for any variance: one more anywhere
            per_cell[int(np.argmax(state.open_units))] = 1
        return Plan(per_cell)
    pair = d.comparisons
    for i in range(len(pair.b)):
        if d.ready[i] and d.high[i] < 0:
            continue
        b = int(pair.b[i])
        target = _target_variance(pair, d, i)
        if target is None:
            return Plan(None)
        scenario_part = pair.variance[i] - _sampling(e, leader, b)
        extra = _extra_judgements(state, leader, b, target - scenario_part)
        if extra is None:
            return Plan(None)
        per_cell[leader] = max(per_cell[leader], extra[0])
        per_cell[b] = extra[1]
    if not per_cell.any() and not bool(d.decided[0]):
        # What is left is the allowance for few scores: one more on the leader narrows it.
        per_cell[leader if state.open_units[leader] else int(np.argmax(state.open_units))] = 1
    return Plan(per_cell)


def expected_judgements(state: CombinedState) -> int | None:
    """About how many more human judgements the leader's decision needs (None: out of reach).

    The plan's total; in a uniform order, judgements go to every open run alike, so as many
    as it takes the cell that needs the largest share of its open runs to get its share.
    """
    needed = plan(state).per_cell
    if needed is None:
        return None
    total = int(needed.sum())
    if state.order is not None and state.order.kind == "uniform":
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(state.open_units > 0, needed / state.open_units, 0.0).max()
        total = max(total, math.ceil(float(share) * int(state.open_units.sum())))
    return max(total, 1)


def _in_serving_order(state: CombinedState, units: Sequence[int]) -> list[int]:
    """The unscored ones of ``units`` (open units of a cell, or of the leaderboard in a
    uniform order) in the order they are served: the stratum with the least share scored
    first, then by clock (what `next_units` does, one at a time)."""
    queues = state.queues
    assert queues is not None
    stratum = queues.stratum if queues.stratum is not None else np.zeros(len(state.runs), int)
    scored = ~np.isnan(state.judged.human)
    waiting: dict[int, list[int]] = {}
    size: Counter[int] = Counter()
    done: Counter[int] = Counter()
    for unit in units:
        h = int(stratum[unit])
        size[h] += 1
        if scored[unit]:
            done[h] += 1
        else:
            waiting.setdefault(h, []).append(unit)
    for lane in waiting.values():
        lane.sort(key=lambda u: queues.clocks[u], reverse=True)
    out: list[int] = []
    while waiting:
        h = min(waiting, key=lambda h: (done[h] / size[h], h))
        out.append(waiting[h].pop())
        done[h] += 1
        if not waiting[h]:
            del waiting[h]
    return out


def _queues(state: CombinedState) -> list[list[int]]:
    """Each cell's unscored open runs (unit indices) in the order its queue serves them."""
    open_ = ~state.judged.known
    return [
        _in_serving_order(state, np.flatnonzero(open_ & (state.judged.cell == c)).tolist())
        for c in range(len(state.cells))
    ]


def next_run(state: CombinedState) -> CellRun | None:
    """The run a human should score next (None: every run is scored): `next_units` on the
    experiment's arrays (uniform order: the first unscored run of the one shuffled queue;
    active order: the front of the queue of the cell the comparisons pick)."""
    if state.queues is None:
        return None
    now = Snapshot(state.sample, state.estimates, state.decision, state.open_units)
    unit = int(next_units(state.judged, state.queues, now)[0])
    return state.runs[unit] if unit >= 0 else None


def inclusion_at_turn(state: CombinedState) -> dict[str, float]:
    """Every unscored run's inclusion probability once its cell's queue is scored up to it
    (k / M in a uniform order): what the export records per item."""
    order, queues = state.order, state.queues
    if order is None or queues is None:
        return {}
    runs = state.runs
    out: dict[str, float] = {}
    lane = queues.queue(state.judged)  # a cell within a stratum
    for q in np.unique(lane):
        queue = [int(u) for u in np.flatnonzero((lane == q) & ~state.judged.known)]
        queue.sort(key=lambda u: order.clock(runs[u].run_id))
        rates = np.asarray([order.rate(runs[u].run_id) for u in queue], dtype=np.float64)
        for u, pi in zip(queue, inclusion_by_turn(rates), strict=True):
            if np.isnan(state.judged.human[u]):
                out[runs[u].run_id] = float(pi)
    return out


def serving_order(state: CombinedState) -> list[str]:
    """Every unscored run's id, in the order a judge file lists them.

    Uniform order: by clock. Active order: first the front of each cell without a human
    score, then the plan's judgements interleaved across cells (the cell with the largest
    share of its planned judgements still to come goes next), then the rest by clock.
    Within a cell runs always come in their queue's order.
    """
    order = state.order
    if order is None:
        return []
    queues = _queues(state)
    served: list[int] = []
    if order.kind == "active":
        taken = [0] * len(queues)
        needed = plan(state).per_cell
        planned = np.zeros(len(queues), dtype=np.intp) if needed is None else needed.copy()
        for c, queue in enumerate(queues):
            if queue and state.estimates.n_sampled[c] == 0:
                served.append(queue[0])
                taken[c] = 1
                planned[c] = max(planned[c] - 1, 0)
        while True:
            left = [c for c in range(len(queues)) if planned[c] > 0 and taken[c] < len(queues[c])]
            if not left:
                break
            c = max(left, key=lambda c: planned[c] / (taken[c] + 1))
            served.append(queues[c][taken[c]])
            taken[c] += 1
            planned[c] -= 1
    chosen = set(served)
    open_ = [u for u in np.flatnonzero(~state.judged.known).tolist() if u not in chosen]
    return [state.runs[u].run_id for u in served + _in_serving_order(state, open_)]


def _sampling(e: Estimates, a: int, b: int) -> float:
    return float(e.sampling_variance[a] + e.sampling_variance[b])


def _target_variance(pair: Difference, d: LeaderDecision, i: int) -> float | None:
    """The variance at which the pair's sequence (today's allowance) excludes 0."""
    gap = -float(pair.mean[i])
    if not gap > 0:
        return None
    horizon = pair.horizon_variance[i : i + 1]
    alpha = d.alpha[i : i + 1]

    def radius(variance: float) -> float:
        return float(sequence_radius(np.asarray([variance]), horizon, alpha)[0])

    low, high = 1e-12, float(pair.variance[i])
    if radius(high) < gap:
        return high
    if radius(low) >= gap:
        return None
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if radius(mid) < gap else (low, mid)
    return low


def _extra_judgements(
    state: CombinedState, a: int, b: int, target: float
) -> tuple[int, int] | None:
    """Judgements in cells a and b (greedy, to the larger drop first) until their sampling
    variances add up to `target`; None if scoring every run is not enough."""
    e = state.estimates
    if target < 0:
        return None
    k = state.sampled.astype(np.float64)
    size = (state.sampled + state.open_units).astype(np.float64)
    current = {c: float(e.sampling_variance[c]) for c in (a, b)}

    def at(c: int, extra: int) -> float:
        kc = k[c] + extra
        if kc >= size[c] or k[c] <= 0 or not math.isfinite(current[c]):
            return 0.0 if kc >= size[c] else current[c]
        base = 1.0 / k[c] - 1.0 / size[c]
        return current[c] * (1.0 / kc - 1.0 / size[c]) / base if base > 0 else 0.0

    added = {a: 0, b: 0}
    while at(a, added[a]) + at(b, added[b]) > target:
        gains = {
            c: at(c, added[c]) - at(c, added[c] + 1) for c in (a, b) if k[c] + added[c] < size[c]
        }
        if not gains:
            return None
        best = max(gains, key=lambda c: gains[c])
        added[best] += 1
    return added[a], added[b]
