"""The variance floor: what a sample too small to show spread borrows (issue 31, item 3).

Two human scores of 4 and 4 say nothing about how far a third may fall from them; their
sample variance of 0 would give a zero-width interval, a zero-width confidence sequence and
a p-value of 0. So no variance a leaderboard uses is taken below a floor: the larger of the
spread pooled over the experiment's cells (`compare._ppi`: the cells are scored by the same
humans on the same scenarios, as in an analysis of variance) and the **rubric's
resolution**, the variance that rounding a judgement to the rubric's scale alone leaves.

A 1–5 criterion is an integer: a judgement recorded as 4 lies anywhere in [3.5, 4.5), a
rounding error spread evenly over one step, whose variance is 1/12 (Sheppard's correction,
1898). The composite adds the three criteria (the flags are set by rules): 3/12 = 0.25.
A variance below that is not evidence of agreement but of the scale's coarseness; the floor
only ever widens an interval.
"""

from __future__ import annotations

from tipbench.suite import CRITERIA

__all__ = ["STEP_VARIANCE", "resolution_variance"]

STEP_VARIANCE = 1.0 / 12.0
"""The variance of a rounding error spread evenly over one step of an integer score."""


def resolution_variance(column: str) -> float:
    """The floor of a scenario value's variance in `column` (a criterion, a flag, or the
    composite): one step's rounding per integer score it adds up."""
    if column == "composite":
        return len(CRITERIA) * STEP_VARIANCE
    return STEP_VARIANCE
