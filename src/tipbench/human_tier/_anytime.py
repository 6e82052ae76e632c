"""The leader as the confidence sequences see it, in any tier: what promotion rests on.

The promotion gate may be asked again after every label (the judging page, `bench_judged`),
so the standings it rests on must hold however often they are read. `anytime_leader` reads
a tier's `LeaderDecision` (`stats._confseq`: every other cell's sequence below the
leader's, α split over the comparisons, human scores on enough scenarios on both sides) as
names and one message: decided, or why not. The human tier gets its decision from the same
machinery on its human-judged scenario values alone (`human_decision`); the combined tier
from its judging order's sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from tipbench._words import counted
from tipbench.human_tier._detectable import DetectableGap, detectable_gap
from tipbench.stats import (
    Estimate,
    Judged,
    LeaderDecision,
    Sample,
    cell_scenarios,
    decide_leader,
    estimate,
    json_number,
    scenarios_needed,
    sequence_estimate,
)

__all__ = ["AnytimeLeader", "anytime_leader", "cannot_decide", "human_decision"]


def cannot_decide(n_scenarios: int, alpha: float) -> str | None:
    """What every view says when the experiment's scenarios are too few for any decision
    (None when they are enough): no paired comparison can reach p < α on them."""
    needed = scenarios_needed(alpha)
    if n_scenarios >= needed:
        return None
    return f"cannot be decided on {counted(n_scenarios, 'scenario')}: collect at least {needed}"


@dataclass(frozen=True)
class AnytimeLeader:
    """A tier's leader by its confidence sequences (valid however often one looks).

    Attributes:
        leader: The leading cell's name (`model|prompt`), None before every cell has an
            estimate.
        decided: Every other cell's sequence lies below the leader's.
        message: "the leader is decided", or why not (in words every view shows).
        sequences: Per other cell, the sequence of its difference with the leader (other −
            leader; an `Estimate` of method "sequence", infinite ends while it has none).
        alpha: The level of each end of each comparison (α / (C − 1), one-sided).
        set_aside: The cells whose runs cover too few scenarios to be compared, with their
            scenarios: the leader is decided among the others.
        detectable: The smallest gap the gate detects on these scenarios.
    """

    leader: str | None
    decided: bool
    message: str
    sequences: Mapping[str, Estimate] = field(default_factory=dict)
    alpha: float = math.nan
    set_aside: Mapping[str, int] = field(default_factory=dict)
    detectable: DetectableGap | None = None

    def aside_note(self) -> str:
        """``; set aside, too few scenarios to compare: …`` (empty when none is)."""
        return _aside(self.set_aside)

    def gain_over(self, name: str) -> Estimate | None:
        """The sequence of (leader − `name`), None if `name` is not compared."""
        found = self.sequences.get(name)
        if found is None:
            return None
        return replace(found, value=-found.value, low=-found.high, high=-found.low)

    def to_dict(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "decided": self.decided,
            "message": self.message,
            "alpha_per_comparison": json_number(self.alpha),
            "set_aside": dict(self.set_aside),
            "detectable": self.detectable.to_dict() if self.detectable else None,
            "sequences": {name: found.to_dict() for name, found in self.sequences.items()},
        }


def anytime_leader(
    names: Sequence[str],
    judged: Judged,
    decision: LeaderDecision,
    human_scenarios: Sequence[int],
    alpha: float,
) -> AnytimeLeader:
    """A one-pool decision in names and words.

    Args:
        names: Each cell's name, in the decision's cell order.
        judged: Every run of the pool, human-scored or not (what the cells cover).
        decision: `decide_leader` on one pool.
        human_scenarios: Each cell's human-judged scenarios.
        alpha: The level over all comparisons.
    """
    scenarios = cell_scenarios(judged).tolist()
    detectable = detectable_gap(judged)
    comparable = decision.comparable
    set_aside = {names[c]: int(n) for c, n in enumerate(scenarios) if not comparable[c]}
    leader = int(decision.leader[0]) if len(decision.leader) else -1
    pair = decision.comparisons
    each = float(decision.alpha[0]) if len(decision.alpha) else alpha
    spans = {
        names[int(b)]: sequence_estimate(mean, low, high, each)
        for b, mean, low, high in zip(pair.b, pair.mean, decision.low, decision.high, strict=True)
    }
    name = names[leader] if leader >= 0 else None

    def said(decided: bool, message: str) -> AnytimeLeader:
        message += _aside(set_aside)
        return AnytimeLeader(name, decided, message, spans, each, set_aside, detectable)

    if not comparable.any():
        too_few = cannot_decide(max(scenarios, default=0), alpha) or ""
        return AnytimeLeader(None, False, too_few, spans, each, detectable=detectable)
    if leader >= 0 and bool(decision.decided[0]):
        return said(True, "the leader is decided")
    needed = decision.needed
    short = [(names[c], n) for c, n in enumerate(human_scenarios) if comparable[c] and n < needed]
    if short:
        cell, n = min(short, key=lambda item: item[1])
        return said(
            False,
            f"every cell needs human scores on at least {needed} scenarios before the leader "
            f"can be decided ({cell}: {n})",
        )
    if leader < 0:
        return said(False, "a cell has no estimate yet")
    open_ = [(other, span) for other, span in spans.items() if not span.high < 0]
    other, span = max(open_, key=lambda item: item[1].high)
    return said(
        False,
        f"{other} may still be ahead of {name}: the confidence sequence of their difference "
        f"is [{span.low:+.2f}, {span.high:+.2f}]",
    )


def _aside(set_aside: Mapping[str, int]) -> str:
    """What every view adds about the cells too short of scenarios to be compared."""
    if not set_aside:
        return ""
    cells = ", ".join(f"{name} ({counted(n, 'scenario')})" for name, n in set_aside.items())
    return f"; set aside, too few scenarios to compare: {cells}"


def human_decision(judged: Judged, alpha: float) -> tuple[LeaderDecision, npt.NDArray[np.intp]]:
    """The human tier's `LeaderDecision` for every pool of `judged` (its human-scored units
    alone, each standing for itself: `Judged.human_tier`), and each cell's human-judged
    scenarios.

    Args:
        judged: Every run of the experiment, human-scored or not (their judge scores are not
            used; the runs no human scored yet make the horizon).
        alpha: The level over all comparisons.
    """
    tier = judged.human_tier()
    estimates = estimate(tier, Sample.none(), use_judge=False)
    decision = decide_leader(tier, Sample.none(), estimates, alpha)
    return decision, estimates.n_human_scenarios
