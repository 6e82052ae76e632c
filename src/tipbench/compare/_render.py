"""Leaderboards as text: a terminal table, JSON, CSV and Markdown.

JSON holds every figure unrounded (one tier: the leaderboard's `to_dict()`; several: an
object keyed by tier). CSV has one line per row of every leaderboard, its tier first. The
table and Markdown round for reading.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from tipbench._words import counted
from tipbench.backends import BACKEND_NAMES
from tipbench.compare._leaderboard import COLUMNS, Leaderboard, LeaderboardRow
from tipbench.compare._notes import board_notes, cannot_reach_alpha
from tipbench.compare._standing import STANDINGS
from tipbench.suite import mean_scale

Format = Literal["table", "json", "csv", "md"]
FORMATS: tuple[Format, ...] = ("table", "json", "csv", "md")

HEADINGS = {
    "composite": "composite",
    "relevance": "relev.",
    "actionability": "action.",
    "tone": "tone",
    "format_ok": "format ok",
    "overlong": "overlong",
}
CSV_FIELDS = (
    "tier",
    "rank",
    "rank_shared",
    "standing",
    "status",
    "model",
    "prompt_version",
    "n_scenarios",
    "n_runs",
    "n_candidates",
    *COLUMNS,
    "interval_low",
    "interval_high",
    "interval_method",
    "vs_leader_n_pairs",
    "vs_leader_difference_value",
    "vs_leader_difference_low",
    "vs_leader_difference_high",
    "vs_leader_difference_method",
    "vs_leader_p_value",
    "vs_leader_min_p_value",
    "vs_leader_verdict",
    "tied_with_leader",
    "combined_n_human",
    "combined_n_effective",
    "combined_lambda",
    "combined_sequence_low",
    "combined_sequence_high",
)
"""A row of the JSON flattened: a nested key is its path joined by `_` (`interval_low`, the
row's `"interval": {"low": …}`)."""
_CSV_P_VALUES = ("vs_leader_p_value", "vs_leader_min_p_value")


def scale_line(columns: Sequence[str], short: bool = False) -> str:
    """What the shown means run over, grouped by scale (the rubric's `mean_scale`):
    `scales: composite 2–17 · relev., action., tone 1–5 · format ok, overlong: share of
    candidates 0–1`. `short` leaves the word "scales" and the candidates out."""
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(mean_scale(column).text(), []).append(HEADINGS[column])
    parts = []
    for text, names in groups.items():
        if text.startswith("share "):
            of = "share" if short else "share of candidates"
            parts.append(f"{', '.join(names)}: {of} {text.removeprefix('share ')}")
        else:
            parts.append(f"{', '.join(names)} {text}")
    return ("" if short else "scales: ") + " · ".join(parts)


def fixed(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", "−")


def _p(value: float) -> str:
    if math.isnan(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def interval(low: float, high: float, signed: bool = False) -> str:
    """`[low, high]`, or `–` when there is no interval (NaN ends)."""
    if math.isnan(low) or math.isnan(high):
        return "–"
    return f"[{fixed(low, signed=signed)}, {fixed(high, signed=signed)}]"


def standing_label(row: LeaderboardRow) -> str:
    """The row's standing in words (see `compare._standing.STANDINGS`)."""
    return STANDINGS[row.standing].label


def versus_leader(row: LeaderboardRow, with_interval: bool = True) -> tuple[str, str]:
    """The comparison with the leader: `(difference [interval], p-value)` for display."""
    vs = row.vs_leader
    if vs is None:
        return "", ""
    if vs.n_pairs == 0:
        return "no shared scenarios", ""
    text = fixed(vs.difference.value, signed=True)
    if with_interval and vs.difference.method != "none":
        text += f" {interval(vs.difference.low, vs.difference.high, signed=True)}"
    return text, _p(vs.p_value) + ("*" if cannot_reach_alpha(row) else "")


TIER_WORDS = {"human": "human judge", "auto": "auto judge", "combined": "combined tiers"}


def _title(board: Leaderboard) -> str:
    return (
        f"{board.experiment} · {TIER_WORDS[board.tier]} · "
        f"{counted(board.n_runs, 'judged run')}, "
        f"{len(board.ranked)} of {counted(len(board.rows), 'cell')} ranked"
    )


def human_worth(row: LeaderboardRow) -> str:
    """The combined tier's human-scored runs and what they are worth: `3 (7.1)`."""
    figures = row.combined
    if figures is None:
        return ""
    return f"{figures.n_human} ({fixed(figures.n_effective, 1)})"


def sequence_text(row: LeaderboardRow) -> str:
    """The combined tier's confidence sequence of Δ: `[−3.10, −0.42]`, `–` if none."""
    figures = row.combined
    if figures is None or row.vs_leader is None:
        return ""
    found = figures.sequence
    low, high = (found.low, found.high) if found is not None else (math.nan, math.nan)
    return interval(low, high, signed=True)


def empty_message(board: Leaderboard) -> str:
    """What to say when a tier has no judged run in the experiment."""
    if board.tier == "combined":
        message = board.judging.message if board.judging else "no judging order yet"
        return f"combined tier of {board.experiment!r}: {message}"
    how = (
        "tipbench judge export, score the file, then tipbench judge apply"
        if board.tier == "human"
        else "tipbench judge auto"
    )
    return f"no {board.tier}-judged runs in experiment {board.experiment!r} yet ({how})"


@dataclass(frozen=True)
class _Layout:
    """Which columns a table shows, from the fullest to the narrowest."""

    criteria: tuple[str, ...] = COLUMNS[1:]
    candidates: bool = True
    scenarios: bool = True
    diff_interval: bool = True
    short_names: bool = False  # and short headings and standings


# Dropped in this order as the width shrinks: the candidate count, the flags, the other
# criteria, the interval of Δ, the scenario count; then names, headings and standings are
# shortened. The composite, its interval, Δ, p and the standing always stay.
_LAYOUTS = (
    _Layout(),
    _Layout(candidates=False),
    _Layout(criteria=COLUMNS[1:4], candidates=False),
    _Layout(criteria=(), candidates=False),
    _Layout(criteria=(), candidates=False, diff_interval=False),
    _Layout(criteria=(), candidates=False, diff_interval=False, scenarios=False),
    _Layout(criteria=(), candidates=False, diff_interval=False, scenarios=False, short_names=True),
)
_SHORT_NAME = 18


def _short(name: str, limit: int = _SHORT_NAME) -> str:
    """A name for a narrow table: a model spec without its backend prefix (a GGUF path by
    its file name), cut to `limit` characters with an ellipsis."""
    prefix, sep, rest = name.partition(":")
    bare = rest if sep and prefix in BACKEND_NAMES else name
    bare = bare.rsplit("/", 1)[-1] or bare
    return bare if len(bare) <= limit else bare[: limit - 1] + "…"


def _build_table(board: Leaderboard, layout: _Layout) -> Table:
    out = Table(
        title=_title(board),
        caption=scale_line(("composite", *layout.criteria), short=layout.short_names),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        title_style="bold",
        min_width=len(_title(board)),
    )
    name = _short if layout.short_names else str
    out.add_column("#", justify="right", no_wrap=True)
    out.add_column("model", overflow="fold")
    out.add_column("prompt", overflow="fold")
    headings = [
        "composite" if not layout.short_names else "comp.",
        f"{board.confidence:.0%} CI",
        *(HEADINGS[c] for c in layout.criteria),
        *(["scen."] if layout.scenarios else []),
        *(["cand."] if layout.candidates else []),
        "Δ vs leader [CI]"
        if layout.diff_interval
        else "Δ"
        if layout.short_names
        else "Δ vs leader",
        "p",
        *(["CS of Δ", "human (worth)"] if board.tier == "combined" else []),
    ]
    for heading in headings:
        out.add_column(heading, justify="right", no_wrap=True)
    out.add_column("standing", no_wrap=True)
    for row in board.rows:
        versus, p_value = versus_leader(row, with_interval=layout.diff_interval)
        cells = [
            row.rank_text,
            name(row.model),
            name(row.prompt_version),
            fixed(row.composite),
            interval(row.interval.low, row.interval.high),
            *(fixed(row.mean(column)) for column in layout.criteria),
            *([str(row.n_scenarios)] if layout.scenarios else []),
            *([str(row.n_candidates)] if layout.candidates else []),
            versus,
            p_value,
            *([sequence_text(row), human_worth(row)] if board.tier == "combined" else []),
        ]
        style = STANDINGS[row.standing]
        out.add_row(
            *(Text(cell) for cell in cells),
            Text(
                style.compact if layout.short_names else style.label, style=f"bold {style.colour}"
            ),
            style=None if row.ranked else "dim",
        )
    return out


def _natural_width(renderable: Table) -> int:
    console = Console(width=10_000, file=io.StringIO(), color_system=None)
    lines = console.render_lines(renderable, console.options, pad=False)
    return max((sum(segment.cell_length for segment in line) for line in lines), default=0)


def table(board: Leaderboard, width: int | None = None) -> Group:
    """One leaderboard for a terminal `width` columns wide: the table, then its notes.

    The fullest layout that fits is chosen: the least useful columns go first (candidate
    count, flags, criteria, the interval of Δ, scenario count), then names are shortened;
    the composite, its interval, Δ, p and the standing (in its colour) are always shown.
    Unranked rows are dimmed.

    Args:
        board: The leaderboard.
        width: The terminal's width; None for the fullest layout.
    """
    chosen = _build_table(board, _LAYOUTS[0])
    if width is not None:
        for layout in _LAYOUTS:
            chosen = _build_table(board, layout)
            if _natural_width(chosen) <= width:
                break
        chosen.min_width = min(chosen.min_width or 0, width)
    return Group(chosen, Text("\n".join(board_notes(board)), style="dim"), Text(""))


def leaderboard_document(board: Leaderboard) -> dict[str, Any]:
    """A leaderboard as JSON-ready values, with its notes after its rows: what `compare
    --format json` prints, the API returns and a logged leaderboard keeps."""
    figures = list(board.to_dict().items())
    after_rows = next(i for i, (key, _) in enumerate(figures) if key == "rows") + 1
    return dict([*figures[:after_rows], ("notes", board_notes(board)), *figures[after_rows:]])


def to_json(boards: Sequence[Leaderboard]) -> str:
    """One leaderboard's `leaderboard_document`, or an object keyed by tier for several."""
    document: dict[str, Any] = (
        leaderboard_document(boards[0])
        if len(boards) == 1
        else {board.tier: leaderboard_document(board) for board in boards}
    )
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _csv_number(field: str, value: Any) -> Any:
    """Numbers rounded as the table shows them: means and intervals to 2 decimals, p to 3
    (a p below 0.001 keeps one significant digit, so it does not read as 0)."""
    if not isinstance(value, float):
        return value
    if field in _CSV_P_VALUES:
        return round(value, 3) if value >= 0.001 else float(f"{value:.1g}")
    return round(value, 2)


def _flat(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested keys as paths joined by `_`: ``{"interval": {"low": 1}}`` → ``interval_low``."""
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if isinstance(value, Mapping):
            flat |= _flat(value, f"{prefix}{key}_")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _csv_values(board: Leaderboard, row: LeaderboardRow) -> dict[str, Any]:
    data = _flat(row.to_dict())
    data["tier"] = board.tier
    return {
        field: "" if data.get(field) is None else _csv_number(field, data[field])
        for field in CSV_FIELDS
    }


def to_csv(boards: Sequence[Leaderboard]) -> str:
    """Every row of every leaderboard, one line each, with a header; numbers rounded like
    the table (JSON keeps them unrounded)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for board in boards:
        for row in board.rows:
            writer.writerow(_csv_values(board, row))
    return buffer.getvalue()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|") or " "


def to_markdown(boards: Sequence[Leaderboard]) -> str:
    """A section per leaderboard: heading, table, notes."""
    parts: list[str] = []
    for board in boards:
        parts.append(f"## Leaderboard: {_title(board)}\n")
        if not board.rows:
            parts.append(f"{empty_message(board)}\n")
            continue
        extra = ["CS of Δ", "human (worth)"] if board.tier == "combined" else []
        # the header and its alignment row, column by column
        header = ["#", "model", "prompt", "composite", f"{board.confidence:.0%} CI",
                  *(HEADINGS[c] for c in COLUMNS[1:]), "scenarios", "candidates",
                  "Δ vs leader [CI]", "p", *extra, "standing"]  # fmt: skip
        align = ["---:", "---", "---", "---:", "---:", *["---:"] * (len(COLUMNS) - 1),
                 "---:", "---:", "---:", "---:", *["---:"] * len(extra), "---"]  # fmt: skip
        lines = [f"| {' | '.join(header)} |", f"| {' | '.join(align)} |"]
        for row in board.rows:
            versus, p_value = versus_leader(row)
            cells = [
                row.rank_text,
                f"`{row.model}`",
                f"`{row.prompt_version}`",
                f"**{fixed(row.composite)}**" if row.first else fixed(row.composite),
                interval(row.interval.low, row.interval.high),
                *(fixed(row.mean(column)) for column in COLUMNS[1:]),
                str(row.n_scenarios),
                str(row.n_candidates),
                versus,
                p_value,
                *([sequence_text(row), human_worth(row)] if extra else []),
                standing_label(row) if row.ranked else f"_{standing_label(row)}_",
            ]
            lines.append(f"| {' | '.join(_md_cell(c) for c in cells)} |")
        lines += ["", f"_Scales: {scale_line(COLUMNS).removeprefix('scales: ')}._"]
        parts.append("\n".join(lines) + "\n")
        parts.append("\n".join(board_notes(board)) + "\n")
    return "\n".join(parts)


def render(boards: Sequence[Leaderboard], fmt: Format) -> str:
    """The leaderboards in a text format (`table` is for terminals: see `table`)."""
    if fmt == "json":
        return to_json(boards)
    if fmt == "csv":
        return to_csv(boards)
    if fmt == "md":
        return to_markdown(boards)
    raise ValueError(f"{fmt!r} is drawn with rich, not rendered as text")
