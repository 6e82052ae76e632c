"""Agreement between the human and the automatic judge tiers on paired ordinal scores.

Each function takes two equally long score sequences (the same candidates, scored once by each
tier) and the criterion's label set in ordinal order: ``(1, 2, 3, 4, 5)`` for the 1-5 criteria,
``(0, 1)`` for the flags. Labels weigh by their position in that order, so unused labels change
nothing but the set still fixes what a valid score is.

Conventions for inputs without information:

- Empty input gives NaN: with no pairs there is no figure to report.
- When *expected* disagreement is zero (both tiers gave every candidate the same single label),
  kappa and alpha are undefined as ratios. Both are defined here as 1.0 if observed agreement is
  perfect, else 0.0. With two complete coders zero expected disagreement forces perfect
  observed agreement, so in practice this case reads 1.0: the tiers agree on everything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Agreement", "agreement", "krippendorff_alpha_ordinal", "quadratic_weighted_kappa"]

_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Agreement:
    """How well two tiers agree on one criterion.

    Attributes:
        n: Number of paired scores.
        kappa: Cohen's kappa with quadratic weights (see `quadratic_weighted_kappa`).
        alpha: Krippendorff's alpha with the ordinal metric (see `krippendorff_alpha_ordinal`).
        exact: Fraction of pairs with equal scores.
        within_1: Fraction of pairs whose scores differ by at most 1.

    With ``n == 0`` every figure is NaN.
    """

    n: int
    kappa: float
    alpha: float
    exact: float
    within_1: float


def _positions(
    a: Sequence[int], b: Sequence[int], labels: Sequence[int]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Validate the inputs and map each score to its label's position in ``labels``."""
    index = {label: i for i, label in enumerate(labels)}
    if len(index) != len(labels):
        raise ValueError(f"labels must be distinct, got {list(labels)}")
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} and {len(b)}")
    unknown = sorted({v for v in (*a, *b) if v not in index})
    if unknown:
        raise ValueError(f"scores {unknown} are not among the labels {list(labels)}")
    return (
        np.fromiter((index[v] for v in a), dtype=np.intp, count=len(a)),
        np.fromiter((index[v] for v in b), dtype=np.intp, count=len(b)),
    )


def _ratio(observed: float, expected: float) -> float:
    """``1 - observed/expected``, with the degenerate ``expected == 0`` case of the module doc."""
    if expected == 0.0:
        return 1.0 if observed == 0.0 else 0.0
    return 1.0 - observed / expected


def quadratic_weighted_kappa(a: Sequence[int], b: Sequence[int], labels: Sequence[int]) -> float:
    """Cohen's kappa with quadratic weights over a fixed label set.

    Matches ``sklearn.metrics.cohen_kappa_score(a, b, weights="quadratic", labels=labels)``
    wherever that is defined.

    Args:
        a: Scores from one tier.
        b: Scores from the other tier, paired with ``a`` by position.
        labels: The valid scores, distinct, in ordinal order.

    Returns:
        Kappa in [-1, 1]; NaN for empty input; 1.0 or 0.0 when expected disagreement is zero
        (see the module docstring).

    Raises:
        ValueError: If the lengths differ, labels repeat, or a score is not a label.
    """
    i, j = _positions(a, b, labels)
    n = len(i)
    if n == 0:
        return math.nan
    k = len(labels)
    observed = np.zeros((k, k), dtype=np.float64)
    np.add.at(observed, (i, j), 1.0)
    grid = np.arange(k, dtype=np.float64)
    weights = (grid[:, None] - grid[None, :]) ** 2
    # Both sums are scaled by n so the counts stay whole numbers until the final division.
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    return _ratio(n * float((weights * observed).sum()), float((weights * expected).sum()))


def krippendorff_alpha_ordinal(a: Sequence[int], b: Sequence[int], labels: Sequence[int]) -> float:
    """Krippendorff's alpha for two coders with no missing values and the ordinal metric.

    Built from the coincidence matrix ``o``: every unit (candidate) adds the ordered pairs
    ``(a, b)`` and ``(b, a)``. With ``n_g`` the label totals of ``o`` and ``n`` their sum, the
    squared ordinal distance between labels ``c <= k`` is
    ``d_ck = (n_c + ... + n_k - (n_c + n_k) / 2) ** 2`` and
    ``alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck)``. Matches the
    ``krippendorff`` package (``level_of_measurement="ordinal"``, ``value_domain=labels``)
    wherever that is defined.

    Args:
        a: Scores from one coder.
        b: Scores from the other coder, paired with ``a`` by position.
        labels: The valid scores, distinct, in ordinal order.

    Returns:
        Alpha at most 1; NaN for empty input; 1.0 or 0.0 when expected disagreement is zero
        (see the module docstring).

    Raises:
        ValueError: If the lengths differ, labels repeat, or a score is not a label.
    """
    i, j = _positions(a, b, labels)
    if len(i) == 0:
        return math.nan
    k = len(labels)
    coincidence = np.zeros((k, k), dtype=np.float64)
    np.add.at(coincidence, (i, j), 1.0)
    coincidence += coincidence.T
    totals = coincidence.sum(axis=1)
    n = float(totals.sum())
    delta = _ordinal_distance(totals)
    observed = float((coincidence * delta).sum())
    expected = float((np.outer(totals, totals) * delta).sum())
    return _ratio((n - 1.0) * observed, expected)


def _ordinal_distance(totals: _FloatArray) -> _FloatArray:
    """Squared ordinal distances between all label positions, given the label totals."""
    cumulative = np.concatenate(([0.0], np.cumsum(totals)))
    low = np.minimum.outer(np.arange(len(totals)), np.arange(len(totals)))
    high = np.maximum.outer(np.arange(len(totals)), np.arange(len(totals)))
    between = cumulative[high + 1] - cumulative[low]
    distance: _FloatArray = (between - (totals[low] + totals[high]) / 2.0) ** 2
    return distance


def agreement(human: Sequence[int], auto: Sequence[int], labels: Sequence[int]) -> Agreement:
    """All agreement figures for one criterion between the human and the automatic tier.

    Args:
        human: Human scores.
        auto: Automatic judge scores, paired with ``human`` by position (same candidates).
        labels: The criterion's valid scores in ordinal order, e.g. ``(1, 2, 3, 4, 5)``, or
            ``(0, 1)`` for a flag.

    Returns:
        The figures; for empty input ``n == 0`` and every figure is NaN. ``exact`` and
        ``within_1`` compare the score values themselves.

    Raises:
        ValueError: If the lengths differ, labels repeat, or a score is not a label.
    """
    kappa = quadratic_weighted_kappa(human, auto, labels)
    alpha = krippendorff_alpha_ordinal(human, auto, labels)
    n = len(human)
    if n == 0:
        return Agreement(n=0, kappa=math.nan, alpha=math.nan, exact=math.nan, within_1=math.nan)
    diff = np.abs(np.asarray(human, dtype=np.float64) - np.asarray(auto, dtype=np.float64))
    return Agreement(
        n=n,
        kappa=kappa,
        alpha=alpha,
        exact=float(np.mean(diff == 0)),
        within_1=float(np.mean(diff <= 1)),
    )
