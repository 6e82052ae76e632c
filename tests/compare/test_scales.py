"""Every leaderboard figure says its scale: the table, Markdown, JSON and the panel's view.

An all-1 judge gives a composite of 5 (with the rules' flags), which must not read as a
perfect score: each mean says what it runs over, composite 2–17, criteria 1–5, flags as a
share of candidates.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from support.judged_experiment import JudgedExperiment
from tipbench.compare import leaderboard_view, leaderboards_for, render, table
from tipbench.suite import COMPOSITE_RANGE

SCALES = {
    "composite": {"low": 2.0, "high": 17.0, "unit": "points"},
    "relevance": {"low": 1, "high": 5, "unit": "points"},
    "actionability": {"low": 1, "high": 5, "unit": "points"},
    "tone": {"low": 1, "high": 5, "unit": "points"},
    "format_ok": {"low": 0, "high": 1, "unit": "share"},
    "overlong": {"low": 0, "high": 1, "unit": "share"},
}


def terminal(judged: JudgedExperiment, width: int | None) -> str:
    human, _ = leaderboards_for(judged.store, judged.name)
    out = io.StringIO()
    Console(file=out, width=width or 250, color_system=None).print(table(human, width))
    return " ".join(out.getvalue().split())


def test_the_json_gives_each_means_scale(judged: JudgedExperiment) -> None:
    human, auto = leaderboards_for(judged.store, judged.name)
    document = json.loads(render([human, auto], "json"))
    for tier in ("human", "auto"):
        assert document[tier]["scale"] == SCALES
    assert (SCALES["composite"]["low"], SCALES["composite"]["high"]) == COMPOSITE_RANGE


def test_the_terminal_table_says_the_scales_of_the_columns_it_shows(
    judged: JudgedExperiment,
) -> None:
    wide = terminal(judged, None)
    assert (
        "scales: composite 2–17 · relev., action., tone 1–5 · format ok, overlong: share of "
        "candidates 0–1"
    ) in wide
    narrow = terminal(judged, 72)  # the criteria are dropped: only the composite's scale
    assert "composite 2–17" in narrow and "1–5" not in narrow


def test_markdown_says_the_scales_under_each_table(judged: JudgedExperiment) -> None:
    human, _ = leaderboards_for(judged.store, judged.name)
    text = render([human], "md")
    assert (
        "_Scales: composite 2–17 · relev., action., tone 1–5 · format ok, overlong: share of "
        "candidates 0–1._"
    ) in text


def test_the_panels_columns_carry_their_scales(judged: JudgedExperiment) -> None:
    human, _ = leaderboards_for(judged.store, judged.name)
    view = leaderboard_view(human)
    scales = {column.heading: column.scale for column in view.columns if column.scale}
    assert scales == {
        "composite": "2–17", "relev.": "1–5", "action.": "1–5", "tone": "1–5",
        "format ok": "share 0–1", "overlong": "share 0–1",
    }  # fmt: skip
