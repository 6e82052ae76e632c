"""Compare (phase C): leaderboards by (model, prompt) with intervals and paired comparisons.

`leaderboard_for` reads an experiment's judged cell runs in one search and ranks them
(`build_leaderboard` does the same for runs already in hand); `render`, `table` and
`plot_leaderboards` show the result, `log_leaderboard` records it in MLflow.
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
    render,
    table,
    to_csv,
    to_json,
    to_markdown,
)
from tipbench.compare._stats import (
    EXACT_MAX_PAIRS,
    PairedComparison,
    bootstrap_mean_ci,
    paired_comparison,
    tied,
)

__all__ = [
    "ALPHA",
    "COLUMNS",
    "CONFIDENCE",
    "DEFAULT_MIN_SCENARIOS",
    "EXACT_MAX_PAIRS",
    "FORMATS",
    "KIND_LEADERBOARD",
    "PLOT_FILE",
    "Format",
    "Leaderboard",
    "LeaderboardRow",
    "PairedComparison",
    "Status",
    "bootstrap_mean_ci",
    "build_leaderboard",
    "empty_message",
    "leaderboard_for",
    "leaderboards_for",
    "log_leaderboard",
    "paired_comparison",
    "plot_leaderboards",
    "render",
    "table",
    "tied",
    "to_csv",
    "to_json",
    "to_markdown",
]
