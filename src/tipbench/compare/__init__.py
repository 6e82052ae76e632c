"""Compare (phase C): leaderboard statistics and paired comparisons with the leader."""

from tipbench.compare._stats import (
    EXACT_MAX_PAIRS,
    PairedComparison,
    bootstrap_mean_ci,
    paired_comparison,
    tied,
)

__all__ = [
    "EXACT_MAX_PAIRS",
    "PairedComparison",
    "bootstrap_mean_ci",
    "paired_comparison",
    "tied",
]
