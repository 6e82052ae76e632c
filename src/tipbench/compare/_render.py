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
from collections.abc import Sequence
from typing import Any, Literal

from rich import box
from rich.table import Table
from rich.text import Text

from tipbench.compare._leaderboard import ALPHA, COLUMNS, Leaderboard, LeaderboardRow

Format = Literal["table", "json", "csv", "md"]
FORMATS: tuple[Format, ...] = ("table", "json", "csv", "md")

_HEADINGS = {
    "composite": "composite",
    "relevance": "relev.",
    "actionability": "action.",
    "tone": "tone",
    "format_ok": "format ok",
    "overlong": "overlong",
}
CSV_FIELDS = (
    "tier", "rank", "status", "model", "prompt_version", "n_scenarios", "n_runs",
    "n_candidates", *COLUMNS, "ci_low", "ci_high", "vs_leader_n_pairs", "vs_leader_diff",
    "vs_leader_ci_low", "vs_leader_ci_high", "vs_leader_p_value", "tied_with_leader",
)  # fmt: skip


def _fixed(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", "−")


def _p(value: float) -> str:
    if math.isnan(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _interval(low: float, high: float, signed: bool = False) -> str:
    return f"[{_fixed(low, signed=signed)}, {_fixed(high, signed=signed)}]"


def _versus(row: LeaderboardRow, with_interval: bool = True) -> tuple[str, str]:
    """The comparison with the leader: `(difference [interval], p-value)` for display."""
    if row.rank == 1:
        return "leader", ""
    vs = row.vs_leader
    if vs is None:
        return "", ""
    if vs.n_pairs == 0:
        return "no shared scenarios", ""
    text = _fixed(vs.mean_diff, signed=True)
    if with_interval:
        text += f" {_interval(vs.ci_low, vs.ci_high, signed=True)}"
    if row.tied_with_leader:
        text += " ≈"
    return text, _p(vs.p_value)


def _title(board: Leaderboard) -> str:
    return (
        f"{board.experiment} · {board.tier} judge · {board.n_runs:,} judged runs, "
        f"{len(board.ranked)} of {len(board.rows)} cells ranked"
    )


def _notes(board: Leaderboard) -> list[str]:
    percent = f"{board.confidence:.0%}"
    notes = [
        f"Means over scenarios (each weighs the same); {percent} bootstrap intervals. "
        f"Δ = this cell − the leader, paired by scenario; ≈ not significant (p ≥ {ALPHA}).",
    ]
    if len(board.ranked) < len(board.rows):
        notes.append(f"Cells judged on fewer than {board.min_scenarios} scenarios are not ranked.")
    notes += [status.describe() for status in board.calibration]
    return notes


def empty_message(board: Leaderboard) -> str:
    """What to say when a tier has no judged run in the experiment."""
    how = (
        "tipbench judge export, score the file, then tipbench judge apply"
        if board.tier == "human"
        else "tipbench judge auto"
    )
    return f"no {board.tier}-judged runs in experiment {board.experiment!r} yet ({how})"


def table(board: Leaderboard, compact: bool = False) -> Table:
    """A rich table of one leaderboard; unranked rows dimmed.

    Args:
        board: The leaderboard.
        compact: Leave out the per-criterion means, the candidate counts and the interval
            of the difference from the leader, for narrow terminals.
    """
    out = Table(
        title=_title(board),
        caption="\n".join(_notes(board)),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        title_style="bold",
    )
    criteria = () if compact else COLUMNS[1:]
    counts = () if compact else ("cand.",)
    out.add_column("#", justify="right", no_wrap=True)
    longest = max((len(row.model) for row in board.rows), default=5)
    out.add_column("model", overflow="fold", min_width=min(longest, 24))
    out.add_column("prompt", overflow="fold", min_width=6)
    for heading in ("composite", f"{board.confidence:.0%} CI",
                    *(_HEADINGS[c] for c in criteria), "scen.", *counts,
                    "Δ vs leader" if compact else "Δ vs leader [CI]", "p"):  # fmt: skip
        out.add_column(heading, justify="right", no_wrap=True)
    for row in board.rows:
        versus, p_value = _versus(row, with_interval=not compact)
        cells = [
            str(row.rank) if row.ranked else "–",
            row.model,
            row.prompt_version,
            _fixed(row.composite),
            _interval(row.ci_low, row.ci_high),
            *(_fixed(row.mean(column)) for column in criteria),
            str(row.n_scenarios),
            *([] if compact else [str(row.n_candidates)]),
            versus if row.ranked else "not ranked",
            p_value,
        ]
        out.add_row(*(Text(cell) for cell in cells), style=None if row.ranked else "dim")
    return out


def to_json(boards: Sequence[Leaderboard]) -> str:
    """One leaderboard's `to_dict()`, or an object keyed by tier for several."""
    document: dict[str, Any] = (
        boards[0].to_dict()
        if len(boards) == 1
        else {board.tier: board.to_dict() for board in boards}
    )
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _csv_values(board: Leaderboard, row: LeaderboardRow) -> dict[str, Any]:
    data = row.to_dict()
    vs = data.pop("vs_leader") or {}
    data |= {f"vs_leader_{k}": v for k, v in vs.items() if k != "exact"}
    data["tier"] = board.tier
    return {field: "" if data.get(field) is None else data[field] for field in CSV_FIELDS}


def to_csv(boards: Sequence[Leaderboard]) -> str:
    """Every row of every leaderboard, one line each, with a header."""
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
        header = ["#", "model", "prompt", "composite", f"{board.confidence:.0%} CI",
                  *(_HEADINGS[c] for c in COLUMNS[1:]), "scenarios", "candidates",
                  "Δ vs leader [CI]", "p"]  # fmt: skip
        align = ["---:", "---", "---", "---:", "---:", *["---:"] * (len(COLUMNS) - 1),
                 "---:", "---:", "---:", "---:"]  # fmt: skip
        lines = [f"| {' | '.join(header)} |", f"| {' | '.join(align)} |"]
        for row in board.rows:
            versus, p_value = _versus(row)
            cells = [
                str(row.rank) if row.ranked else "–",
                f"`{row.model}`",
                f"`{row.prompt_version}`",
                f"**{_fixed(row.composite)}**" if row.rank == 1 else _fixed(row.composite),
                _interval(row.ci_low, row.ci_high),
                *(_fixed(row.mean(column)) for column in COLUMNS[1:]),
                str(row.n_scenarios),
                str(row.n_candidates),
                versus if row.ranked else f"_{row.status}_",
                p_value,
            ]
            lines.append(f"| {' | '.join(_md_cell(c) for c in cells)} |")
        parts.append("\n".join(lines) + "\n")
        parts.append("\n".join(_notes(board)) + "\n")
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
