"""Compare (phase C): leaderboards by (model, prompt) with intervals and paired comparisons.

`leaderboard_for` reads an experiment's judged cell runs in one search and ranks them
(`build_leaderboard` does the same for runs already in hand; `place` ranks and classifies
any cells from their paired comparisons, `STANDINGS` says how each class is shown);
`render`, `table` and `plot_leaderboards` show the result, `leaderboard_view` formats it for
the web panel, `log_leaderboard` records it in MLflow.
"""

from tipbench.compare._anytime import AnytimeLeader, cannot_decide
from tipbench.compare._build import (
    build_leaderboard,
    judging_state,
    leaderboard_for,
    leaderboards_for,
)
from tipbench.compare._combined import (
    NO_AUTOMATIC_SCORES,
    CombinedState,
    build_combined,
    combined_board,
    combined_state,
    combined_versus,
)
from tipbench.compare._judging import (
    Plan,
    inclusion_at_turn,
    judging_status,
    next_run,
    plan,
    serving_order,
)
from tipbench.compare._leaderboard import (
    BOARD_TIERS,
    COLUMNS,
    DEFAULT_MIN_SCENARIOS,
    BoardTier,
    CombinedFigures,
    JudgingStatus,
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
from tipbench.compare._order import (
    DEFAULT_ORDER,
    KIND_JUDGING_ORDER,
    ORDERS,
    JudgingOrder,
    Order,
    current_order,
    ensure_order,
)
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

# The policy loop's statistics, read through compare until it imports tipbench.stats itself
# (issue 33, phase 2: then these go).
from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    PairedComparison,
    bootstrap_mean_ci,
    paired_comparison,
)

__all__ = [
    "ALPHA",
    "BOARD_TIERS",
    "COLUMNS",
    "CONFIDENCE",
    "DEFAULT_MIN_SCENARIOS",
    "DEFAULT_ORDER",
    "FIRST",
    "FORMATS",
    "KIND_JUDGING_ORDER",
    "KIND_LEADERBOARD",
    "LEGEND",
    "NO_AUTOMATIC_SCORES",
    "ORDERS",
    "PLOT_FILE",
    "STALE_TAG",
    "STANDINGS",
    "AnytimeLeader",
    "BoardTier",
    "CombinedFigures",
    "CombinedState",
    "Format",
    "JudgingOrder",
    "JudgingStatus",
    "Leaderboard",
    "LeaderboardRow",
    "LeaderboardView",
    "Order",
    "PairedComparison",
    "Placing",
    "Plan",
    "Refresh",
    "Standing",
    "StandingStyle",
    "Status",
    "bootstrap_mean_ci",
    "build_combined",
    "build_leaderboard",
    "cannot_decide",
    "combined_board",
    "combined_state",
    "combined_versus",
    "current_order",
    "empty_message",
    "ensure_order",
    "inclusion_at_turn",
    "interval_note",
    "judging_state",
    "judging_status",
    "latest_leaderboard_run",
    "leaderboard_for",
    "leaderboard_view",
    "leaderboard_warnings",
    "leaderboards_for",
    "log_leaderboard",
    "next_run",
    "paired_comparison",
    "place",
    "plan",
    "plot_leaderboards",
    "rank_text",
    "refresh_logged_leaderboard",
    "render",
    "serving_order",
    "table",
    "to_csv",
    "to_json",
    "to_markdown",
]
