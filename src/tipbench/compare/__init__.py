"""Compare (phase C): leaderboards by (model, prompt) with intervals and paired comparisons.

`leaderboard_for` reads an experiment's judged cell runs in one search and ranks them
(`build_leaderboard` does the same for runs already in hand); `render`, `table` and
`plot_leaderboards` show the result, `leaderboard_view` formats it for the web panel,
`log_leaderboard` records it in MLflow.
"""

from tipbench.compare._build import build_leaderboard, leaderboard_for, leaderboards_for
from tipbench.compare._leaderboard import (
    ALPHA,
    COLUMNS,
    CONFIDENCE,
    DEFAULT_MIN_SCENARIOS,
    Leaderboard,
    LeaderboardRow,
    Status,
)
from tipbench.compare._log import KIND_LEADERBOARD, PLOT_FILE, log_leaderboard
from tipbench.compare._plot import plot_leaderboards
from tipbench.compare._render import (
    FORMATS,
    Format,
    empty_message,
    leaderboard_warnings,
    render,
    table,
    to_csv,
    to_json,
    to_markdown,
)
from tipbench.compare._stats import (
    EXACT_MAX_PAIRS,
    PairedComparison,
    Verdict,
    bootstrap_mean_ci,
    min_attainable_p,
    paired_comparison,
    pairs_needed,
    tied,
    verdict,
)
from tipbench.compare._view import LEGEND, LeaderboardView, leaderboard_view

__all__ = [
    "ALPHA",
    "COLUMNS",
    "CONFIDENCE",
    "DEFAULT_MIN_SCENARIOS",
    "EXACT_MAX_PAIRS",
    "FORMATS",
    "KIND_LEADERBOARD",
    "LEGEND",
    "PLOT_FILE",
    "Format",
    "Leaderboard",
    "LeaderboardRow",
    "LeaderboardView",
    "PairedComparison",
    "Status",
    "Verdict",
    "bootstrap_mean_ci",
    "build_leaderboard",
    "empty_message",
    "leaderboard_for",
    "leaderboard_view",
    "leaderboard_warnings",
    "leaderboards_for",
    "log_leaderboard",
    "min_attainable_p",
    "paired_comparison",
    "pairs_needed",
    "plot_leaderboards",
    "render",
    "table",
    "tied",
    "to_csv",
    "to_json",
    "to_markdown",
    "verdict",
]
