"""Compare (phase C): leaderboards by (model, prompt) with intervals and paired comparisons.

`leaderboard_for` reads an experiment's judged cell runs in one search and ranks them
(`build_leaderboard` does the same for runs already in hand; `place` ranks and classifies
any cells from their paired comparisons, `STANDINGS` says how each class is shown; the
combined tier reads the judging state of `tipbench.human_tier`); `render`, `table` and
`plot_leaderboards` show the result, `leaderboard_view` formats it for the web panel,
`log_leaderboard` records it in MLflow. The statistics are `tipbench.stats`'.
"""

from tipbench.compare._build import (
    beside_human,
    build_leaderboard,
    leaderboard_for,
    leaderboards_for,
)
from tipbench.compare._combined import (
    NO_AUTOMATIC_SCORES,
    build_combined,
    combined_board,
    combined_versus,
)
from tipbench.compare._leaderboard import (
    BOARD_TIERS,
    COLUMNS,
    DEFAULT_MIN_SCENARIOS,
    BoardTier,
    CombinedFigures,
    Leaderboard,
    LeaderboardRow,
    Status,
)
from tipbench.compare._log import (
    KIND_LEADERBOARD,
    PLOT_FILE,
    STALE_TAG,
    Refresh,
    latest_leaderboard_run,
    log_leaderboard,
    refresh_logged_leaderboard,
)
from tipbench.compare._notes import interval_note, leaderboard_warnings
from tipbench.compare._plot import plot_leaderboards
from tipbench.compare._render import (
    FORMATS,
    Format,
    empty_message,
    leaderboard_document,
    render,
    table,
    to_csv,
    to_json,
    to_markdown,
)
from tipbench.compare._standing import (
    FIRST,
    LEGEND,
    STANDINGS,
    Placing,
    Standing,
    StandingStyle,
    place,
    rank_text,
)
from tipbench.compare._view import LeaderboardView, leaderboard_view

__all__ = [
    "BOARD_TIERS",
    "COLUMNS",
    "DEFAULT_MIN_SCENARIOS",
    "FIRST",
    "FORMATS",
    "KIND_LEADERBOARD",
    "LEGEND",
    "NO_AUTOMATIC_SCORES",
    "PLOT_FILE",
    "STALE_TAG",
    "STANDINGS",
    "BoardTier",
    "CombinedFigures",
    "Format",
    "Leaderboard",
    "LeaderboardRow",
    "LeaderboardView",
    "Placing",
    "Refresh",
    "Standing",
    "StandingStyle",
    "Status",
    "beside_human",
    "build_combined",
    "build_leaderboard",
    "combined_board",
    "combined_versus",
    "empty_message",
    "interval_note",
    "latest_leaderboard_run",
    "leaderboard_document",
    "leaderboard_for",
    "leaderboard_view",
    "leaderboard_warnings",
    "leaderboards_for",
    "log_leaderboard",
    "place",
    "plot_leaderboards",
    "rank_text",
    "refresh_logged_leaderboard",
    "render",
    "table",
    "to_csv",
    "to_json",
    "to_markdown",
]
