"""The variance floor: what a sample too small to show spread borrows (issue 31, item 3).

Two human scores of 4 and 4 say nothing about how far a third may fall from them; their
sample variance of 0 would give a zero-width interval, a zero-width confidence sequence and
a p-value of 0. So no variance a leaderboard uses is taken below a floor: the larger of the
spread pooled over the experiment's cells (`stats._ppi`: the cells are scored by the same
humans on the same scenarios, as in an analysis of variance) and the **scale's
resolution**, the variance that rounding a judgement to an integer scale alone leaves.

A 1–5 criterion is an integer: a judgement recorded as 4 lies anywhere in [3.5, 4.5), a
rounding error spread evenly over one step, whose variance is 1/12 (Sheppard's correction,
1898). A score that adds up n such integers (the bench's composite adds its rubric's three
criteria: 3/12 = 0.25) has n of them. A variance below that is not evidence of agreement
but of the scale's coarseness; the floor only ever widens an interval.
"""

from __future__ import annotations

__all__ = ["STEP_VARIANCE", "resolution_variance"]

STEP_VARIANCE = 1.0 / 12.0
"""The variance of a rounding error spread evenly over one step of an integer score."""


def resolution_variance(integer_scores: int = 1) -> float:
    """The floor of the variance of a score that adds up `integer_scores` integer scores
    (one step's rounding each; independent roundings add their variances).

    Raises:
        ValueError: If `integer_scores` is below 1.
    """
    if integer_scores < 1:
        raise ValueError(f"a score adds up at least one integer score, got {integer_scores}")
    return integer_scores * STEP_VARIANCE
