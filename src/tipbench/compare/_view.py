"""A leaderboard as the web panel shows it: cells already formatted, notes, colours.

The panel draws what it is given: every number is formatted, every note worded and every
colour chosen here, by the same functions as `tipbench compare` (`_render`) and its chart
(`_plot`, which takes its colours and labels from this module).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from tipbench._words import counted
from tipbench.compare._leaderboard import COLUMNS, Leaderboard, LeaderboardRow
from tipbench.compare._render import HEADINGS, board_notes, fixed, interval, versus_leader
from tipbench.suite import COMPOSITE_RANGE
from tipbench.tracking import Tier

LEADER_COLOUR = "#d9822b"
TIED_COLOUR = "#f2c18f"
RANKED_COLOUR = "#2f6f9f"
UNRANKED_COLOUR = "#c8c8c8"
LEGEND: tuple[tuple[str, str], ...] = (
    (LEADER_COLOUR, "leader"),
    (TIED_COLOUR, "not significantly behind the leader (p ≥ 0.05)"),
    (RANKED_COLOUR, "behind the leader"),
    (UNRANKED_COLOUR, "too little judged data, not ranked"),
)
"""Each bar colour with what it means, as the chart's legend says it."""
#: How a row stands, its table row's class: the leader, tied with it, behind it, unranked.
RowKind = Literal["leader", "tied", "ranked", "unranked"]
TIER_TITLES: dict[Tier, str] = {"human": "Human judge", "auto": "Automatic judge"}


def row_colour(row: LeaderboardRow) -> str:
    """The colour of a row's bar (see `LEGEND`)."""
    if not row.ranked:
        return UNRANKED_COLOUR
    if row.rank == 1:
        return LEADER_COLOUR
    return TIED_COLOUR if row.tied_with_leader else RANKED_COLOUR


def chart_label(row: LeaderboardRow) -> str:
    """A row's label in a chart: `1. model · prompt`, unranked ones with their scenarios."""
    rank = f"{row.rank}." if row.ranked else "–"
    suffix = "" if row.ranked else f"  ({row.n_scenarios} scen.)"
    return f"{rank} {row.model} · {row.prompt_version}{suffix}"


def upper_limit(board: Leaderboard) -> float:
    """Where a chart's axis ends: 17, or just above the data (bars start at the floor)."""
    top = [v for row in board.rows for v in (row.ci_high, row.composite) if not math.isnan(v)]
    return min(COMPOSITE_RANGE[1], math.floor(max(top, default=COMPOSITE_RANGE[1])) + 1.0)


def axis_label(board: Leaderboard) -> str:
    """The title of a chart's value axis."""
    low, high = COMPOSITE_RANGE
    return f"mean composite ({low:g}–{high:g}), {board.confidence:.0%} bootstrap CI"


class Column(BaseModel):
    heading: str
    numeric: bool = True
    strong: bool = False


class Bar(BaseModel):
    """A row in the chart: its mean composite and interval (None when not a number)."""

    label: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    text: str
    tooltip: str
    colour: str
    muted: bool


class Row(BaseModel):
    kind: RowKind
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
    tier: Tier
    title: str
    summary: str
    columns: list[Column]
    rows: list[Row]
    notes: list[str]
    calibration: list[CalibrationNote]
    chart: Chart


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _kind(row: LeaderboardRow) -> RowKind:
    if not row.ranked:
        return "unranked"
    if row.rank == 1:
        return "leader"
    return "tied" if row.tied_with_leader else "ranked"


def _row(row: LeaderboardRow) -> Row:
    difference, p_value = versus_leader(row)
    label, composite = chart_label(row), fixed(row.composite)
    ci = interval(row.ci_low, row.ci_high)
    return Row(
        kind=_kind(row),
        cells=[
            str(row.rank) if row.ranked else "–",
            row.model,
            row.prompt_version,
            composite,
            ci,
            *(fixed(row.mean(column)) for column in COLUMNS[1:]),
            str(row.n_scenarios),
            str(row.n_candidates),
            difference if row.ranked else "not ranked",
            p_value,
        ],
        bar=Bar(
            label=label,
            value=_number(row.composite),
            ci_low=_number(row.ci_low),
            ci_high=_number(row.ci_high),
            text=composite,
            tooltip=f"{label}: {composite} {ci}",
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
        Column(heading=HEADINGS["composite"], strong=True),
        Column(heading=f"{percent} CI"),
        *(Column(heading=HEADINGS[column]) for column in COLUMNS[1:]),
        Column(heading="scen."),
        Column(heading="cand."),
        Column(heading="Δ vs leader [CI]"),
        Column(heading="p"),
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
    )
