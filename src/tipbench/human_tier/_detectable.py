"""What the gate can detect on an experiment's scenarios, said before anyone judges.

A gate that holds but cannot decide wastes a judge's afternoon, so `run`, `compare`,
`judge export`, the judging page and `optimize` say up front the smallest gap between the
best cell and the next that the gate finds in 80% of experiments once every run is judged
(`stats.smallest_gap`). It rests on how much one scenario's difference between two cells
varies: read on the human scores where they cover enough scenarios, else on the automatic
judge's (a stand-in: a judge that agrees with itself may vary less than people do), else
`ASSUMED_SPREAD`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tipbench._words import counted
from tipbench.stats import (
    ALPHA,
    Judged,
    Sample,
    cell_scenarios,
    comparable_cells,
    estimate,
    json_number,
    pool_pairs,
    scenarios_needed,
    smallest_gap,
)

__all__ = ["ASSUMED_SPREAD", "POWER", "DetectableGap", "detectable_gap"]

ASSUMED_SPREAD = 2.0
"""Composite points: how much one scenario's difference between two cells is assumed to vary
(its standard deviation) before any scores say. The world of `bench/labels_to_decision.py`,
whose one-look t test has the power an outside check measured on the bundled suite, has
1.96."""
POWER = 0.8
"""The share of experiments in which the stated gap is found."""

Source = Literal["human", "judge", "assumed"]
_SOURCE_WORDS: dict[Source, str] = {
    "human": "read on the human scores",
    "judge": "read on the automatic judge's scores",
    "assumed": "assumed before any scores",
}


@dataclass(frozen=True)
class DetectableGap:
    """The smallest gap the gate detects on an experiment (see the module's description).

    Attributes:
        n_scenarios: The experiment's scenarios (the most any cell runs on).
        n_cells: The cells the gate compares.
        gap: Composite points (NaN: no decision is possible on these scenarios or cells).
        spread: The standard deviation of one scenario's difference it assumes.
        source: Where that spread was read: the human scores, the automatic judge's, or
            nowhere yet (`ASSUMED_SPREAD`).
    """

    n_scenarios: int
    n_cells: int
    gap: float
    spread: float
    source: Source

    @classmethod
    def assumed(cls, n_scenarios: int, n_cells: int) -> DetectableGap:
        """Before any run exists (`optimize`'s held-out grid): `ASSUMED_SPREAD`."""
        usable = n_scenarios >= scenarios_needed(ALPHA) and n_cells >= 2
        gap = smallest_gap(n_scenarios, n_cells, ASSUMED_SPREAD) if usable else math.nan
        return cls(n_scenarios, n_cells, gap, ASSUMED_SPREAD, "assumed")

    def describe(self) -> str:
        """`8 scenarios: the gate can detect a gap of about 2.3 composite points …`"""
        if not math.isfinite(self.gap):
            return (
                f"{counted(self.n_scenarios, 'scenario')}, {counted(self.n_cells, 'cell')}: no "
                "gap can be detected (the gate needs two cells on at least "
                f"{scenarios_needed(ALPHA)} scenarios)"
            )
        return (
            f"{counted(self.n_scenarios, 'scenario')}: the gate can detect a gap of about "
            f"{self.gap:.1f} composite points between the best cell and the next "
            f"({POWER:.0%} of the time with every run judged; one scenario's difference "
            f"varies by about {self.spread:.1f} points, {_SOURCE_WORDS[self.source]})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_scenarios": self.n_scenarios,
            "n_cells": self.n_cells,
            "gap": json_number(self.gap),
            "spread": json_number(self.spread),
            "source": self.source,
            "power": POWER,
        }


def detectable_gap(judged: Judged, spread: float | None = None) -> DetectableGap:
    """What the gate can detect on one leaderboard's units (one pool).

    Args:
        judged: Every run of the experiment with the scores it has (human, judge, both).
        spread: The spread to assume instead of reading one (`optimize`, before any run).
    """
    needed = scenarios_needed(ALPHA)
    n_scenarios = int(cell_scenarios(judged).max(initial=0))
    comparable = comparable_cells(judged, needed)
    n_cells = int(comparable.sum()) or judged.n_cells
    source: Source = "assumed"
    if spread is None:
        spread, source = _read_spread(judged, comparable)
    usable = n_scenarios >= needed and n_cells >= 2
    gap = smallest_gap(n_scenarios, n_cells, spread) if usable else math.nan
    return DetectableGap(n_scenarios, n_cells, gap, spread, source)


def _read_spread(judged: Judged, comparable: np.ndarray[Any, Any]) -> tuple[float, Source]:
    """The spread of one scenario's difference, pooled over the comparable cells' pairs: on
    the human scores where every such cell has them on enough scenarios, else on the judge's."""
    tier = judged.human_tier()
    alone = estimate(tier, Sample.none(), use_judge=False)
    covered = alone.n_human_scenarios[comparable] if comparable.any() else np.zeros(0)
    if len(covered) >= 2 and covered.min() >= scenarios_needed(ALPHA):
        pooled = pool_pairs(tier, Sample.none(), alone, comparable).unit_variance[0]
        if math.isfinite(pooled):
            return math.sqrt(pooled), "human"
    if np.isfinite(judged.auto).sum() > 2:
        auto = Judged.build(
            judged.cell,
            judged.scenario,
            np.full(len(judged.cell), np.nan),
            judged.auto,
            np.isfinite(judged.auto),
            judged.pool,
            judged.floor,
        )
        seen = auto.human_tier()
        estimates = estimate(seen, Sample.none(), use_judge=False)
        pooled = pool_pairs(seen, Sample.none(), estimates, comparable).unit_variance[0]
        if math.isfinite(pooled) and pooled > 0:
            return math.sqrt(pooled), "judge"
    return ASSUMED_SPREAD, "assumed"
