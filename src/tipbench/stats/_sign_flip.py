"""Confidence intervals and paired tests for the leaderboard and for promotion.

Intervals follow the size of the sample (`mean_interval`). Up to `EXACT_MAX_PAIRS` values
the interval is exact: the values of the mean that the sign-flip test does not reject, read
off the means of the sample's subsets (Hartigan, 1969). It agrees with the test by
construction, and below `pairs_needed(alpha)` values it does not exist (the test can
reject nothing), so none is given. Above, the percentile bootstrap, which on few values is
little more than their range and covers far less often than it claims.

Everything is seeded and vectorised with numpy: the same inputs and seed give the same figures,
and 10,000 resamples of 100 values take milliseconds. Inputs without information give NaN
rather than raising: an empty cell has no mean, two cells without shared scenarios have no
paired difference.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from tipbench.stats._estimate import ALPHA, CONFIDENCE, Estimate, IntervalMethod, json_number

__all__ = [
    "EXACT_MAX_PAIRS",
    "PairedComparison",
    "Verdict",
    "bootstrap_mean_ci",
    "mean_interval",
    "min_attainable_p",
    "paired_comparison",
    "pairs_needed",
    "sign_flip_interval",
    "tied",
    "verdict",
]

Verdict = Literal["different", "not different", "inconclusive"]
"""What a paired comparison lets one say; see `verdict`."""

EXACT_MAX_PAIRS = 16
"""Up to this many pairs the sign-flip test enumerates all 2**n flips; above, it samples."""

_CHUNK = 1 << 20  # resampled values held in memory at once
_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairedComparison:
    """A candidate compared with the leader, paired by scenario.

    Attributes:
        n_pairs: Number of scenarios both sides have.
        difference: The mean over those scenarios of other - leader (negative: other is
            behind) with its confidence interval (see `mean_interval`; NaN ends when there
            is none), how it was made, and ``n`` the pairs.
        p_value: Two-sided sign-flip permutation p-value for a mean difference of zero.
        exact: True if ``p_value`` comes from enumerating every sign flip.
        min_p_value: The smallest p-value the test can give with this many pairs, whatever
            the differences: ``2 / 2**n_pairs`` when exact. Above the significance level,
            nothing can be significant.
        sequence: The difference's anytime-valid confidence sequence, an `Estimate` of
            method "sequence" (None: none; the combined tier and the promotion gate make
            one, `stats._confseq`). Where a comparison has a sequence, "significantly ahead"
            means the sequence excludes 0 (`anytime`), not the single-look test.

    With ``n_pairs == 0`` every figure is NaN.
    """

    n_pairs: int
    difference: Estimate
    p_value: float
    exact: bool
    min_p_value: float = math.nan
    sequence: Estimate | None = None

    @property
    def anytime(self) -> bool:
        """The comparison carries a confidence sequence (valid however often one looks)."""
        return self.sequence is not None and self.sequence.has_interval

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``n_pairs``, ``difference`` and ``sequence`` (`Estimate.to_dict`, the
        latter None), ``p_value``, ``exact``, ``min_p_value``: the one way both loops write
        a paired comparison."""
        return {
            "n_pairs": self.n_pairs,
            "difference": self.difference.to_dict(),
            "p_value": json_number(self.p_value),
            "exact": self.exact,
            "min_p_value": json_number(self.min_p_value),
            "sequence": None if self.sequence is None else self.sequence.to_dict(),
        }


def min_attainable_p(n_pairs: int, n_resamples: int = 10_000) -> float:
    """The smallest p-value the sign-flip test can give on `n_pairs` pairs.

    Exact (up to `EXACT_MAX_PAIRS` pairs): the observed signs and their mirror image always
    count, so ``2 / 2**n``. Sampled: ``1 / (n_resamples + 1)``. NaN without pairs.
    """
    if n_pairs < 1:
        return math.nan
    if n_pairs <= EXACT_MAX_PAIRS:
        return 2.0 / (1 << n_pairs)
    return 1.0 / (n_resamples + 1)


def pairs_needed(alpha: float) -> int:
    """The fewest pairs with which the exact sign-flip test can reach ``p < alpha``."""
    n = 1
    while min_attainable_p(n) >= alpha and n < EXACT_MAX_PAIRS:
        n += 1
    return n


def _finite(values: Sequence[float]) -> _FloatArray:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite numbers")
    return x


def _chunks(total: int, n: int) -> Iterator[int]:
    """Split ``total`` resamples of ``n`` values into batches of bounded memory."""
    step = max(1, _CHUNK // max(n, 1))
    for start in range(0, total, step):
        yield min(step, total - start)


def _bootstrap(
    x: _FloatArray, confidence: float, n_resamples: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan
    index = np.int32 if n < 2**31 else np.int64  # narrower indices draw faster
    means = np.concatenate(
        [
            x[rng.integers(0, n, size=(size, n), dtype=index)].mean(axis=1)
            for size in _chunks(n_resamples, n)
        ]
    )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(x.mean()), float(low), float(high)


def bootstrap_mean_ci(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """The mean of ``values`` and its percentile-bootstrap confidence interval.

    Args:
        values: The sample, e.g. one cell's per-scenario composites.
        confidence: Confidence level of the interval, strictly between 0 and 1.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the resampling; the same seed gives the same interval.

    Returns:
        ``(mean, low, high)``; ``(nan, nan, nan)`` for an empty sample, and ``(x, x, x)`` for a
        single value.

    Raises:
        ValueError: If a value is not finite, ``confidence`` is outside (0, 1) or
            ``n_resamples`` is not positive.
    """
    return _bootstrap(_finite(values), confidence, n_resamples, np.random.default_rng(seed))


def _subset_means(x: _FloatArray) -> _FloatArray:
    """The means of the 2**n - 1 non-empty subsets of `x`."""
    sums, sizes = np.zeros(1), np.zeros(1)
    for value in x:
        sums = np.concatenate([sums, sums + value])
        sizes = np.concatenate([sizes, sizes + 1.0])
    means: _FloatArray = sums[1:] / sizes[1:]
    return means


def _sign_flip_bounds(x: _FloatArray, confidence: float) -> tuple[float, float]:
    """The exact interval of ``x``'s centre (NaN, NaN when no interval exists)."""
    n = len(x)
    if n == 0:
        return math.nan, math.nan
    # The two-sided exact test of centre d (flipped sums counted with >=, as in
    # `_sign_flip_p_value`) gives p = (1 + k) / 2**(n-1) for d below the mean, where k
    # counts the subset means <= d. It does not reject while k >= j: from the j-th smallest
    # subset mean up to the j-th largest.
    j = math.ceil((1.0 - confidence) * 2.0 ** (n - 1) - 1.0 - 1e-9)
    if j <= 0:
        return math.nan, math.nan  # even p = 2 / 2**n is not below 1 - confidence
    means = _subset_means(x)
    low, high = np.partition(means, (j - 1, len(means) - j))[[j - 1, len(means) - j]]
    return float(low), float(high)


def sign_flip_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The exact confidence interval that inverts the sign-flip test of the mean.

    Every centre ``d`` that the two-sided sign-flip test of ``values - d`` does not reject
    at ``1 - confidence``: for ``values`` symmetric about their centre, it covers it with
    probability at least ``confidence`` whatever their distribution. Its ends are means of
    subsets of ``values``; all 2**n of them are enumerated, so n is at most
    `EXACT_MAX_PAIRS`.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when no interval exists: with n values the test cannot
        give a p below 2 / 2**n, so below `pairs_needed` values it rejects nothing.

    Raises:
        ValueError: If a value is not finite, there are more than `EXACT_MAX_PAIRS` values,
            or ``confidence`` is outside (0, 1).
    """
    x = _finite(values)
    if len(x) > EXACT_MAX_PAIRS:
        raise ValueError(f"at most {EXACT_MAX_PAIRS} values for an exact interval, got {len(x)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return _sign_flip_bounds(x, confidence)


def _interval(
    x: _FloatArray, confidence: float, n_resamples: int, rng: np.random.Generator
) -> Estimate:
    n = len(x)
    if n == 0 or n > EXACT_MAX_PAIRS:
        mean, low, high = _bootstrap(x, confidence, n_resamples, rng)
        method: IntervalMethod = "bootstrap" if n else "none"
        return Estimate(mean, low, high, method, n=n, confidence=confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    low, high = _sign_flip_bounds(x, confidence)
    method = "none" if math.isnan(low) else "sign-flip"
    return Estimate(float(x.mean()), low, high, method, n=n, confidence=confidence)


def mean_interval(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Estimate:
    """The mean of ``values`` and the confidence interval that fits their number.

    Up to `EXACT_MAX_PAIRS` values the exact `sign_flip_interval` (none at all below
    `pairs_needed(1 - confidence)` values); above, the percentile bootstrap with
    ``n_resamples`` resamples seeded by ``seed``.

    Raises:
        ValueError: If a value is not finite, ``confidence`` is outside (0, 1) or
            ``n_resamples`` is not positive.
    """
    return _interval(_finite(values), confidence, n_resamples, np.random.default_rng(seed))


def _sign_flip_p_value(
    diffs: _FloatArray, n_resamples: int, rng: np.random.Generator
) -> tuple[float, bool]:
    """Two-sided p-value of the sign-flip test on the mean, and whether it is exact."""
    n = len(diffs)
    observed = abs(float(diffs.sum()))
    # Flipped sums equal to the observed one may differ from it by rounding; count them as equal.
    threshold = observed - 1e-10 * max(float(np.abs(diffs).sum()), 1.0)
    if n <= EXACT_MAX_PAIRS:
        bits = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
        sums = (1 - 2 * bits) @ diffs
        return float(np.count_nonzero(np.abs(sums) >= threshold)) / (1 << n), True
    # Each sign flips with probability 1/2, one random bit per difference; a flipped sum is
    # total - 2 * (sum of the flipped ones). Bits come 8 to a random byte, and for each
    # group of 8 differences a 256-entry table holds the sum each byte value flips, so a
    # draw costs n/8 table look-ups instead of n multiplications.
    n_bytes = -(-n // 8)
    groups = np.zeros(n_bytes * 8)
    groups[:n] = diffs  # padding differences are 0: flipping them changes nothing
    byte_bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)  # (256, 8)
    tables = groups.reshape(n_bytes, 8) @ byte_bits.T.astype(np.float64)  # (n_bytes, 256)
    total = float(diffs.sum())
    hits = 0
    for size in _chunks(n_resamples, n_bytes):
        draws = np.frombuffer(rng.bytes(size * n_bytes), dtype=np.uint8).reshape(size, n_bytes)
        flipped = tables[np.arange(n_bytes), draws].sum(axis=1)
        hits += int(np.count_nonzero(np.abs(total - 2.0 * flipped) >= threshold))
    # Counting the observed labelling as one of the draws keeps the p-value valid (never 0).
    return (hits + 1) / (n_resamples + 1), False


def paired_comparison(
    leader: Mapping[str, float],
    other: Mapping[str, float],
    confidence: float = CONFIDENCE,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedComparison:
    """Compare ``other`` with ``leader`` over the scenarios both have.

    Differences are other - leader per shared scenario id; keys only one side has are ignored.
    The p-value comes from a sign-flip permutation test of the mean difference: exact (all
    2**n flips) up to `EXACT_MAX_PAIRS` pairs, Monte-Carlo with ``n_resamples`` seeded draws
    above that. The interval is the one `mean_interval` gives the differences: exact, and
    so in agreement with the test, up to `EXACT_MAX_PAIRS` pairs.

    Args:
        leader: Per-scenario score of the leader, keyed by scenario id.
        other: Per-scenario score of the compared cell, keyed by scenario id.
        confidence: Confidence level of the interval of the mean difference.
        n_resamples: Bootstrap resamples, and Monte-Carlo draws for the permutation test.
        seed: Seed of both; the same inputs and seed give the same comparison.

    Returns:
        The comparison; with no shared scenario ``n_pairs == 0`` and every figure is NaN.

    Raises:
        ValueError: If a score is not finite, ``confidence`` is outside (0, 1) or
            ``n_resamples`` is not positive.
    """
    shared = sorted(leader.keys() & other.keys())
    diffs = _finite([other[key] - leader[key] for key in shared])
    boot_seed, perm_seed = np.random.SeedSequence(seed).spawn(2)
    interval = _interval(diffs, confidence, n_resamples, np.random.default_rng(boot_seed))
    if len(diffs) == 0:
        p_value, exact = math.nan, False
    else:
        p_value, exact = _sign_flip_p_value(diffs, n_resamples, np.random.default_rng(perm_seed))
    return PairedComparison(
        n_pairs=len(diffs),
        difference=interval,
        p_value=p_value,
        exact=exact,
        min_p_value=min_attainable_p(len(diffs), n_resamples),
    )


def tied(comparison: PairedComparison, alpha: float = ALPHA) -> bool:
    """Whether the two sides are not significantly different at level ``alpha``.

    Decided by the permutation p-value alone (``p_value >= alpha``), not by the bootstrap
    interval: the p-value is exact for small samples, where a percentile interval is too
    narrow. A comparison without shared scenarios (NaN p-value) counts as tied: there is no
    evidence of a difference.

    Args:
        comparison: The paired comparison.
        alpha: Significance level.

    Returns:
        True if the difference is not significant.
    """
    return math.isnan(comparison.p_value) or comparison.p_value >= alpha


def verdict(comparison: PairedComparison, alpha: float = ALPHA) -> Verdict:
    """What the comparison shows at level ``alpha``: the test and the interval must agree.

    - "different": the permutation test is significant (``p < alpha``) and the bootstrap
      interval of the difference excludes 0;
    - "not different": the test is not significant, the interval holds 0, and the test
      could have been significant with this many pairs;
    - "inconclusive": anything else: no shared scenarios, too few pairs for the test ever
      to reach ``alpha`` (see `min_attainable_p`), or a test and an interval that disagree
      (which only a bootstrap interval, above `EXACT_MAX_PAIRS` pairs, can do). Neither a
      difference nor a tie is claimed then.
    """
    c = comparison
    if c.n_pairs == 0 or math.isnan(c.p_value) or not c.min_p_value < alpha:
        return "inconclusive"
    holds_zero = c.difference.low <= 0.0 <= c.difference.high
    if c.p_value < alpha and not holds_zero:
        return "different"
    if c.p_value >= alpha and holds_zero:
        return "not different"
    return "inconclusive"
