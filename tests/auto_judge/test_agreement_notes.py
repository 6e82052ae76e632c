"""The notes beside agreement figures: a constant side, and flags both tiers take from the rules.

κ with a constant side is checked against scikit-learn: it is 0 whatever the other side gave.
"""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from support.cells import record_cells
from support.cli import tipbench
from tipbench.auto_judge import agreement, calibration_figures, constant_side_note
from tipbench.auto_judge._agreement_notes import Side, same_rules_note
from tipbench.suite import CRITERION_LEVELS, FLAG_LEVELS
from tipbench.tracking import Scores, TrackingStore, record_scores

# The case: a judge that answers 1 to everything beside a human who mostly gives 1.
HUMAN = [1, 1, 1, 1, 1, 1, 1, 2]
AUTO = [1] * 8


def test_a_constant_side_gets_kappa_zero_and_a_note_that_says_why() -> None:
    figures = agreement(HUMAN, AUTO, CRITERION_LEVELS)
    reference = cohen_kappa_score(HUMAN, AUTO, weights="quadratic", labels=CRITERION_LEVELS)

    assert figures.kappa == pytest.approx(reference) == 0.0
    assert figures.exact == 7 / 8
    note = constant_side_note(
        "relevance", Side("the human", HUMAN), Side("the automatic judge", AUTO),
        figures.kappa, figures.exact,
    )  # fmt: skip
    assert note == (
        "relevance: the automatic judge gave every candidate 1, so κ is 0.00 whatever the "
        "human gave (a constant score ranks nothing); the 88% exact agreement is how often "
        "the human gave 1 too"
    )


def test_no_note_when_both_sides_spread_or_too_few_items() -> None:
    human, auto = [1, 2, 3, 4], [2, 2, 3, 5]
    figures = agreement(human, auto, CRITERION_LEVELS)
    assert constant_side_note("tone", Side("a", human), Side("b", auto), 0.5, 0.5) is None
    assert constant_side_note("tone", Side("a", [3]), Side("b", [3]), 1.0, 1.0) is None
    assert figures.n == 4


def test_both_sides_constant_reads_as_no_spread_not_as_agreement() -> None:
    same = agreement([3, 3, 3], [3, 3, 3], CRITERION_LEVELS)
    note = constant_side_note(
        "tone", Side("a", [3] * 3), Side("b", [3] * 3), same.kappa, same.exact
    )
    assert same.kappa == 1.0
    assert note == (
        "tone: both a and b gave every candidate 3: κ is 1.00 by convention, with no spread "
        "to agree on"
    )
    apart = agreement([4, 4, 4], [2, 2, 2], CRITERION_LEVELS)
    note = constant_side_note(
        "tone", Side("a", [4] * 3), Side("b", [2] * 3), apart.kappa, apart.exact
    )
    assert apart.kappa == 0.0
    assert note == (
        "tone: a gave every candidate 4 and b every one 2: κ is 0.00, as neither ranks anything"
    )


def test_the_flags_note_counts_the_humans_overrides_of_the_rules() -> None:
    figures = {
        "format_ok": agreement([1, 1, 0, 1], [1, 1, 1, 1], FLAG_LEVELS),
        "overlong": agreement([0, 0, 0, 0], [0, 0, 0, 0], FLAG_LEVELS),
    }
    note = same_rules_note(figures)
    assert note.startswith("format_ok and overlong: both tiers hold the rules' flags")
    assert "(a human changed format_ok on 1 of 4)" in note
    assert note.endswith("never the judge's skill")


def test_judge_agreement_says_the_scales_and_explains_kappa_beside_exact(
    sqlite_uri: str, experiment: str
) -> None:
    """The issue's reading: relevance κ 0.00 beside 88% exact, flags at κ 1.00: both noted."""
    run_ids = record_cells(sqlite_uri, experiment, n_scenarios=4)  # 4 runs × 2 candidates
    client = TrackingStore(sqlite_uri).client
    tones = iter([2, 3, 4, 5, 2, 3, 4, 5])
    for index, run_id in enumerate(run_ids):
        pair = HUMAN[2 * index : 2 * index + 2]
        human = {f"c{i + 1}": Scores(r, 3, next(tones), 1, 0) for i, r in enumerate(pair)}
        auto = {f"c{i + 1}": Scores(1, 3, s.tone, 1, 0) for i, s in enumerate(human.values())}
        record_scores(client, run_id, "human", human, "alice", 0)
        record_scores(client, run_id, "auto", auto, "llamacpp:smollm2-135m", 0)

    table = tipbench("judge", "agreement", "--experiment", experiment, "--tracking-uri", sqlite_uri)
    assert table.returncode == 0, table.stderr
    out = " ".join(table.stdout.split())  # the table wraps long lines
    assert "relevance (1–5)" in out and "format_ok (0/1)" in out
    assert "κ and α: 1 is full agreement, 0 what chance gives" in out
    assert "shares of the candidates" in out
    assert "note: relevance: the automatic judge gave every candidate 1, so κ is 0.00" in out
    assert "the 88% exact agreement is how often the human gave 1 too" in out
    # actionability: both gave 3 everywhere; tone: the same spread on both sides, no note
    assert "note: actionability: both the human and the automatic judge gave every" in out
    assert "note: tone:" not in out
    assert "note: format_ok and overlong: both tiers hold the rules' flags" in out
    assert "no human changed any" in out

    result = tipbench(
        "judge", "agreement", "--experiment", experiment, "--tracking-uri", sqlite_uri,
        "--format", "json",
    )  # fmt: skip
    document = json.loads(result.stdout)
    assert document["relevance"]["kappa"] == 0.0 and document["relevance"]["exact"] == 7 / 8
    assert document["scale"]["scores"] == {
        "relevance": [1, 2, 3, 4, 5], "actionability": [1, 2, 3, 4, 5], "tone": [1, 2, 3, 4, 5],
        "format_ok": [0, 1], "overlong": [0, 1],
    }  # fmt: skip
    assert document["scale"]["kappa"] == {"low": -1.0, "high": 1.0, "chance": 0.0}
    assert document["scale"]["exact"]["unit"] == "share"
    assert len(document["notes"]) == 3
    assert document["notes"][0].startswith("relevance: the automatic judge gave every candidate")


def test_calibration_notes_a_judge_that_gives_every_tip_one_score() -> None:
    """The bundled judge answered 1 to every calibration tip: κ 0.00 beside the exact
    agreement of the tips whose agreed score is 1, and the calibration says why."""
    agreed = [Scores(level, 3, 3, 1, 0) for level in (1, 1, 2, 3, 4, 5)]
    judged = [Scores(1, 3, 3, 1, 0)] * 6
    figures = calibration_figures(agreed, judged)
    note = figures["relevance"].note()
    assert figures["relevance"].kappa == 0.0
    assert note == (
        "relevance: the judge gave every tip 1, so κ is 0.00 whatever the agreed scores gave "
        "(a constant score ranks nothing); the 33% exact agreement is how often the agreed "
        "scores gave 1 too"
    )
    assert figures["actionability"].note() is not None  # both sides 3 everywhere
    assert figures["tone"].kappa == 1.0
