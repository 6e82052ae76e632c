"""What an agreement figure cannot say on its own: the notes printed beside κ and agreement.

Two cases make a figure read wrongly without a note:

- **One side is constant.** When either side gives every candidate the same score,
  quadratic-weighted κ is 0 whatever the other side gave: expected and observed
  disagreement are then equal (Cohen 1968; with a single row or column the confusion matrix
  is its own expectation). Exact agreement can still be high, as it only says how often the
  other side gave that score too: a judge that answers 1 to everything beside a human who
  mostly gives 1 reads "κ 0.00, 88% exact". When both sides are the same constant, κ is
  1.0 by this package's convention (`_agreement`), with no spread to agree on.
- **Both sides come from the same rules.** The automatic tier records the rules' flags
  (`format_ok`, `overlong`), and a human's come pre-filled with them: their figures count
  only the human's overrides of a rule, never the judge's skill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from tipbench.auto_judge._agreement import Agreement
from tipbench.suite import CRITERIA, FLAGS

__all__ = [
    "FIGURE_SCALES",
    "Side",
    "constant",
    "constant_side_note",
    "same_rules_note",
    "tier_notes",
]

#: What each agreement figure runs over: κ from −1 to 1 (0: chance), α at most 1 (0:
#: chance), exact and within-1 agreement as shares of the candidates (or tips).
FIGURE_SCALES: dict[str, dict[str, float | str | None]] = {
    "kappa": {"low": -1.0, "high": 1.0, "chance": 0.0},
    "alpha": {"low": None, "high": 1.0, "chance": 0.0},
    "exact": {"low": 0.0, "high": 1.0, "unit": "share"},
    "within_1": {"low": 0.0, "high": 1.0, "unit": "share"},
}


class Side(NamedTuple):
    """One side of a comparison: who scored (`the automatic judge`) and their scores."""

    who: str
    scores: Sequence[int]


def constant(scores: Sequence[int]) -> int | None:
    """The one score every item got, or None (no items, or more than one score given)."""
    found = set(scores)
    return found.pop() if len(found) == 1 else None


def constant_side_note(
    name: str, first: Side, second: Side, kappa: float, exact: float, items: str = "candidate"
) -> str | None:
    """Why κ reads as it does when a side gave every one of `items` the same score; None
    when neither did (or there are fewer than two items: no figure means anything then).

    Args:
        name: The criterion.
        first: One side's scores.
        second: The other side's scores of the same items, in the same order.
        kappa: Their κ.
        exact: Their exact agreement (a share).
        items: What was scored, in the singular ("candidate", "tip").
    """
    if len(first.scores) < 2:
        return None
    a, b = constant(first.scores), constant(second.scores)
    if a is None and b is None:
        return None
    if a is not None and b is not None:
        if a == b:
            return (
                f"{name}: both {first.who} and {second.who} gave every {items} {a}: κ is "
                f"{kappa:.2f} by convention, with no spread to agree on"
            )
        return (
            f"{name}: {first.who} gave every {items} {a} and {second.who} every one {b}: "
            f"κ is {kappa:.2f}, as neither ranks anything"
        )
    fixed, other, value = (first, second, a) if a is not None else (second, first, b)
    return (
        f"{name}: {fixed.who} gave every {items} {value}, so κ is {kappa:.2f} whatever "
        f"{other.who} gave (a constant score ranks nothing); the {exact:.0%} exact "
        f"agreement is how often {other.who} gave {value} too"
    )


def same_rules_note(figures: Mapping[str, Agreement]) -> str:
    """Why the flags' figures say nothing of the judge: both sides are the rules' flags."""
    changed = [
        f"{name} on {round((1 - figures[name].exact) * figures[name].n)} of {figures[name].n}"
        for name in FLAGS
        if figures[name].n and figures[name].exact < 1
    ]
    overrides = f"a human changed {', '.join(changed)}" if changed else "no human changed any"
    return (
        f"{' and '.join(FLAGS)}: both tiers hold the rules' flags (the automatic tier records "
        "the rules' flags, a human's come pre-filled with them), so these figures only count "
        f"a human's overrides of a rule ({overrides}), never the judge's skill"
    )


def tier_notes(
    figures: Mapping[str, Agreement],
    human: Mapping[str, Sequence[int]],
    auto: Mapping[str, Sequence[int]],
) -> list[str]:
    """The notes of `judge agreement`: a constant side per criterion, then the flags."""
    notes = []
    for name in CRITERIA:
        sides = Side("the human", human[name]), Side("the automatic judge", auto[name])
        note = constant_side_note(name, *sides, figures[name].kappa, figures[name].exact)
        if note is not None:
            notes.append(note)
    if any(figures[name].n for name in FLAGS):
        notes.append(same_rules_note(figures))
    return notes
