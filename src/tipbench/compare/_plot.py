"""The leaderboard chart: mean composite with its interval per (model, prompt), ranked.

matplotlib is imported here only, and only when a chart is drawn, with the Agg backend (no
display needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tipbench.compare._leaderboard import Leaderboard
from tipbench.compare._standing import LEGEND
from tipbench.compare._view import axis_label, chart_label, row_colour, upper_limit
from tipbench.suite import COMPOSITE_RANGE

_ROW_INCHES = 0.42


def plot_leaderboards(boards: Sequence[Leaderboard], path: Path) -> Path:
    """Draw one panel per leaderboard into a PNG file at `path`; return the path.

    Bars are the mean composite from the rubric's floor (2), whiskers its confidence
    interval (none where a cell has too few scenarios for one); each bar has its standing's
    colour (`compare._standing.STANDINGS`: the leader orange, tied light orange, undecided
    lilac, behind blue, too little data grey). The axis ends at 17, or just above the data.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n_rows = max((len(board.rows) for board in boards), default=1)
    height = 2.2 + _ROW_INCHES * max(n_rows, 2)
    figure, axes = plt.subplots(
        1, len(boards), figsize=(8.0 * len(boards), height), squeeze=False, layout="constrained"
    )
    high = max(upper_limit(board) for board in boards)  # one scale for every panel
    for axis, board in zip(axes[0], boards, strict=True):
        _panel(axis, board, high)
    figure.legend(
        handles=[Patch(color=colour, label=label) for colour, label in LEGEND],
        loc="outside lower center",
        ncols=2 if len(boards) == 1 else 3,
        frameon=False,
        fontsize=9,
    )
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _panel(axis: Any, board: Leaderboard, high: float) -> None:
    axis.set_title(
        f"{board.experiment} · {board.tier} judge · {board.n_runs:,} judged runs",
        fontsize=12,
        loc="left",
        fontweight="bold",
    )
    if not board.rows:
        axis.text(0.5, 0.5, "no judged runs", ha="center", va="center", transform=axis.transAxes)
        axis.set_axis_off()
        return
    low = COMPOSITE_RANGE[0]  # bars that start above the floor would exaggerate
    labels = [chart_label(row) for row in board.rows]
    means = [row.composite for row in board.rows]
    positions = list(range(len(board.rows)))
    axis.barh(
        positions,
        [m - low for m in means],
        left=low,
        color=[row_colour(row) for row in board.rows],
        height=0.62,
    )
    with_interval = [
        (position, row)
        for position, row in zip(positions, board.rows, strict=True)
        if math.isfinite(row.interval.low) and math.isfinite(row.interval.high)
    ]  # a row without an interval gets no whiskers, not a zero-width one
    if with_interval:
        axis.errorbar(
            [row.composite for _, row in with_interval],
            [position for position, _ in with_interval],
            xerr=[
                [row.composite - row.interval.low for _, row in with_interval],
                [row.interval.high - row.composite for _, row in with_interval],
            ],
            fmt="none",
            ecolor="#333333",
            capsize=3,
            elinewidth=1.2,
        )
    for position, mean, row in zip(positions, means, board.rows, strict=True):
        axis.text(
            max(mean, row.interval.high if math.isfinite(row.interval.high) else mean)
            + (high - low) * 0.012,
            position,
            f"{mean:.2f}",
            va="center",
            fontsize=9,
            color="#333333" if row.ranked else "#888888",
        )
    axis.set_yticks(positions, labels, fontsize=10)
    for tick, row in zip(axis.get_yticklabels(), board.rows, strict=True):
        if not row.ranked:
            tick.set_color("#888888")
    axis.invert_yaxis()  # rank 1 on top
    axis.set_xlim(low, high + (high - low) * 0.08)  # room for the value labels
    axis.set_xlabel(axis_label(board, separator="\n"))
    axis.grid(axis="x", color="#e5e5e5", linewidth=0.8)
    axis.set_axisbelow(True)
    for side in ("top", "right"):
        axis.spines[side].set_visible(False)
