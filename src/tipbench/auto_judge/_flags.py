"""What the automatic judge's answers are worth: the rules' flags over its own, and a
warning when its scores cannot tell the candidates apart.

The rules own `format_ok` and `overlong` (SPEC §4): the automatic tier records the flags
collect's rules gave each candidate, and keeps the judge's own answer beside them (the
`auto_judge_flags` tag, and the raw answer in `auto_answers.json`) for the warnings here
and for anyone checking the judge. Only a human judge overrides a rule's flag.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

from tipbench.suite import CRITERIA, FLAGS
from tipbench.tracking import CellRun, CellTag, RecordedCandidate, Scores

#: Below this many candidates, the same score everywhere says little about the judge.
CONSTANT_MIN_CANDIDATES = 5


def with_rule_flags(
    scores: dict[str, Scores], candidates: Iterable[RecordedCandidate]
) -> dict[str, Scores]:
    """The judge's scores with each candidate's flags replaced by the rules' (collect's)."""
    rules = {c.id: c for c in candidates}
    return {
        cid: replace(s, format_ok=rules[cid].format_ok, overlong=rules[cid].overlong)
        for cid, s in scores.items()
    }


def judge_flags(run: CellRun) -> dict[str, tuple[int, int]]:
    """The automatic judge's own flags per candidate (empty for a run judged before they
    were kept)."""
    try:
        data = json.loads(run.extra_tags.get(CellTag.AUTO_JUDGE_FLAGS, "{}"))
    except json.JSONDecodeError:
        return {}
    return (
        {cid: (int(v[0]), int(v[1])) for cid, v in data.items()} if isinstance(data, dict) else {}
    )


def constant_score_warnings(runs: list[CellRun]) -> list[str]:
    """A warning per judge model whose scores of a criterion are the same for every
    candidate, and per flag the judge answered the same for every candidate where the rules
    tell them apart.

    Such a judge cannot tell the candidates apart: its leaderboard ranks noise. (Its flags
    are not recorded, the rules' are; a judge that cannot see them is still worth knowing.)
    """
    by_judge: dict[str, list[Scores]] = {}
    flags_by_judge: dict[str, list[tuple[Scores, tuple[int, int]]]] = {}
    for run in runs:
        judge = run.judge_of("auto")
        recorded = run.scores("auto")
        by_judge.setdefault(judge, []).extend(recorded.values())
        answered = judge_flags(run)
        flags_by_judge.setdefault(judge, []).extend(
            (recorded[cid], answered[cid]) for cid in recorded if cid in answered
        )
    warnings = []
    for judge, scores in sorted(by_judge.items()):
        if len(scores) < CONSTANT_MIN_CANDIDATES:
            continue
        constant = [
            f"{name} {getattr(scores[0], name)}"
            for name in CRITERIA
            if len({getattr(s, name) for s in scores}) == 1
        ]
        if constant:
            warnings.append(
                f"judge {judge or 'unknown'} gave all {len(scores)} candidates "
                f"{', '.join(constant)}: its scores cannot tell them apart"
            )
        warnings += _constant_flags(judge or "unknown", flags_by_judge.get(judge, []))
    return warnings


def _constant_flags(judge: str, pairs: list[tuple[Scores, tuple[int, int]]]) -> list[str]:
    """Flags the judge answered the same for every candidate, where the rules differ."""
    if len(pairs) < CONSTANT_MIN_CANDIDATES:
        return []
    warnings = []
    for index, name in enumerate(FLAGS):
        answers = {answered[index] for _, answered in pairs}
        if len(answers) != 1:
            continue
        (value,) = answers
        differ = sum(1 for rules, _ in pairs if getattr(rules, name) != value)
        if differ:
            warnings.append(
                f"judge {judge} answered {name} {value} for all {len(pairs)} candidates, "
                f"where the rules give {1 - value} for {differ}: it cannot tell them apart "
                "(the rules' flags are kept)"
            )
    return warnings
