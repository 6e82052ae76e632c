"""A leaderboard as the web panel shows it: cells already formatted, notes, colours.

The panel draws what it is given: every number is formatted and every note worded here, by
the same functions as `tipbench compare` (`_render`) and its chart (`_plot`, which takes its
labels from this module); each row carries the standing the leaderboard computed and its
colour from `compare._standing`, the one home of both.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from tipbench._words import counted
from tipbench.compare._leaderboard import COLUMNS, BoardTier, Leaderboard, LeaderboardRow
from tipbench.compare._notes import board_notes
from tipbench.compare._render import (
    HEADINGS,
    fixed,
    human_worth,
    interval,
    sequence_text,
    versus_leader,
)
from tipbench.compare._standing import STANDINGS, Standing
from tipbench.stats import EXACT_MAX_PAIRS, json_number, pairs_needed
from tipbench.suite import COMPOSITE_RANGE, mean_scale

TIER_TITLES: dict[BoardTier, str] = {
    "human": "Human judge",
    "auto": "Automatic judge",
    "combined": "Combined (human + automatic)",
}


def row_colour(row: LeaderboardRow) -> str:
    """The colour of a row's bar: its standing's (see `STANDINGS`)."""
    return STANDINGS[row.standing].colour


def chart_label(row: LeaderboardRow) -> str:
    """A row's label in a chart: `1= model · prompt`, unranked ones with their scenarios."""
    suffix = "" if row.ranked else f"  ({row.n_scenarios} scen.)"
    return f"{row.rank_text} {row.model} · {row.prompt_version}{suffix}"


def upper_limit(board: Leaderboard) -> float:
    """Where a chart's axis ends: 17, or just above the data (bars start at the floor)."""
    top = [v for row in board.rows for v in (row.interval.high, row.composite) if math.isfinite(v)]
    return min(COMPOSITE_RANGE[1], math.floor(max(top, default=COMPOSITE_RANGE[1])) + 1.0)


def axis_label(board: Leaderboard, separator: str = "; ") -> str:
    """The title of a chart's value axis: what the bars and whiskers are (`separator`
    between the two: a new line in the PNG)."""
    low, high = COMPOSITE_RANGE
    if board.tier == "combined":
        return (
            f"mean composite ({low:g}–{high:g}), combined{separator}whiskers: "
            f"{board.confidence:.0%} t interval of the combined estimate"
        )
    return (
        f"mean composite ({low:g}–{high:g}){separator}whiskers: {board.confidence:.0%} CI, "
        f"exact up to {EXACT_MAX_PAIRS} scenarios, bootstrap above, none below "
        f"{pairs_needed(1.0 - board.confidence)}"
    )


def interval_text(row: LeaderboardRow) -> str:
    """A row's interval for a tooltip: `[low, high] (exact)`, or why there is none."""
    if row.interval.method == "none":
        return f"no interval on {row.n_scenarios} scenarios"
    kind = {"sign-flip": "exact", "ppi": "combined, t"}.get(row.interval.method, "bootstrap")
    return f"{interval(row.interval.low, row.interval.high)} ({kind})"


class Column(BaseModel):
    heading: str
    numeric: bool = True
    strong: bool = False
    scale: str | None = None
    """What the column's means run over (`1–5`, `2–17`, `share 0–1`), shown under its
    heading."""


class Bar(BaseModel):
    """A row in the chart: its mean composite and its interval (`Estimate.to_dict`: ends
    None when not a number)."""

    label: str
    value: float | None
    interval: dict[str, float | int | str | None]
    text: str
    tooltip: str
    colour: str
    muted: bool


class Row(BaseModel):
    """A table row: its standing (the page's class of the row, from the leaderboard), its
    formatted cells, and its bar."""

    standing: Standing
    cells: list[str]
    bar: Bar


class CalibrationNote(BaseModel):
    calibrated: bool
    text: str


class Chart(BaseModel):
    title: str
    axis: str
    low: float
    high: float


class LeaderboardView(BaseModel):
    """One tier's leaderboard, ready to show."""

    experiment: str
    tier: BoardTier
    title: str
    summary: str
    columns: list[Column]
    rows: list[Row]
    notes: list[str]
    calibration: list[CalibrationNote]
    chart: Chart
    judging: str | None = None
    """The combined tier: how the human judging stands ("the leader is decided: …")."""
    decided: bool = False


def _row(row: LeaderboardRow) -> Row:
    difference, p_value = versus_leader(row)
    label, composite = chart_label(row), fixed(row.composite)
    standing = STANDINGS[row.standing].label
    return Row(
        standing=row.standing,
        cells=[
            row.rank_text,
            row.model,
            row.prompt_version,
            composite,
            interval(row.interval.low, row.interval.high),
            *(fixed(row.mean(column)) for column in COLUMNS[1:]),
            str(row.n_scenarios),
            str(row.n_candidates),
            difference,
            p_value,
            *([sequence_text(row), human_worth(row)] if row.combined is not None else []),
            standing,
        ],
        bar=Bar(
            label=label,
            value=json_number(row.composite),
            interval=row.interval.to_dict(),
            text=composite,
            tooltip=f"{label}: {composite} {interval_text(row)}, {standing}",
            colour=row_colour(row),
            muted=not row.ranked,
        ),
    )


def leaderboard_view(board: Leaderboard) -> LeaderboardView:
    """The leaderboard of one tier as the panel shows it: table, chart and notes."""
    percent = f"{board.confidence:.0%}"
    columns = [
        Column(heading="#"),
        Column(heading="model", numeric=False),
        Column(heading="prompt", numeric=False),
        Column(heading=HEADINGS["composite"], strong=True, scale=mean_scale("composite").text()),
        Column(heading=f"{percent} CI"),
        *(
            Column(heading=HEADINGS[column], scale=mean_scale(column).text())
            for column in COLUMNS[1:]
        ),
        Column(heading="scen."),
        Column(heading="cand."),
        Column(heading="Δ vs leader [CI]"),
        Column(heading="p"),
        *(
            [Column(heading="CS of Δ"), Column(heading="human (worth)")]
            if board.tier == "combined"
            else []
        ),
        Column(heading="standing", numeric=False),
    ]
    title = TIER_TITLES[board.tier]
    return LeaderboardView(
        experiment=board.experiment,
        tier=board.tier,
        title=title,
        summary=f"{counted(board.n_runs, 'judged run')}, {len(board.ranked)} of "
        f"{counted(len(board.rows), 'cell')} ranked",
        columns=columns,
        rows=[_row(row) for row in board.rows],
        notes=board_notes(board, calibration=False),
        calibration=[
            CalibrationNote(calibrated=status.calibrated, text=status.describe())
            for status in board.calibration
        ],
        chart=Chart(
            title=f"Mean composite per (model, prompt), {title}",
            axis=axis_label(board),
            low=COMPOSITE_RANGE[0],
            high=upper_limit(board),
        ),
        judging=board.judging.message if board.judging else None,
        decided=board.judging.decided if board.judging else False,
    )
