"""Issue 45, item 2: a reflection answer becomes a proposal only if it holds a fenced
template for the part asked for, keeps every placeholder and copies no training scenario's
text that its parent did not; otherwise it is a skipped proposal with its reason.

The answers below are the shapes real reflection models give (the first two are what the
bundled 135M model answered in a new user's run: talk with no template, and the training
person's task list pasted in as the system prompt).
"""

from __future__ import annotations

import pytest

from tipbench.optimize import SkipReason, skipped_by_reason
from tipbench.optimize._checks import Problem, check_template
from tipbench.optimize._lineage import Skipped
from tipbench.optimize._reflect import read_reflection
from tipbench.suite import Component, load_suite

SUITE = load_suite()
V1, FEW_SHOT = SUITE.prompt("v1"), SUITE.prompt("v3-few-shot")
STUDENT = SUITE.scenario("student-morning")
TRAINING = (STUDENT, SUITE.scenario("engineer-evening"))
SYSTEM = "You write short, concrete tips for one person, tied to the time of day. JSON only."


def fenced(text: str, label: str = "") -> str:
    return f"Reasons: be concrete.\n```{label}\n{text}\n```"


@pytest.mark.parametrize(
    ("component", "parent", "answer", "reason", "detail"),
    [
        ("system", V1.system, "I am not sure what you mean. Bananas 3.",
         SkipReason.NO_TEMPLATE, "the answer holds no fenced template"),
        ("system", V1.system, fenced("\n".join(STUDENT.tasks)),
         SkipReason.SCENARIO_TEXT,
         "it copies training scenario student-morning's text ('Organic chemistry quiz Wednesday "
         "09:00', 'Enzyme kinetics lab report due Thursday…' and 3 more)"),
        ("system", V1.system, f"{SYSTEM} Remember Maya.".join(["```\n", "\n```"]),
         SkipReason.SCENARIO_TEXT, "it copies training scenario student-morning's text ('Maya')"),
        ("user", V1.user, fenced(V1.user.replace("$tasks", f"$tasks\nLike: {STUDENT.tasks[3]}")),
         SkipReason.SCENARIO_TEXT, "it copies training scenario student-morning's text"),
        ("system", V1.system, "Reasons: shorter.\n```\nYou write short tips, one per task",
         SkipReason.CUT_OFF, "the template is cut off (no closing ```)"),
        ("system", V1.system, fenced(SYSTEM, "user"),
         SkipReason.OTHER_PART, "marked as the user template, not the system one"),
        ("system", V1.system, fenced(SYSTEM) + "\n" + fenced(SYSTEM + " Be kind."),
         SkipReason.OTHER_PART, "2 fenced blocks, none marked as the system template"),
        ("system", V1.system, fenced(V1.system), SkipReason.UNCHANGED, "the template is unchanged"),
        ("user", V1.user, fenced(V1.user.replace("$tasks", "your tasks")),
         SkipReason.PLACEHOLDERS, "it drops the placeholder $tasks"),
        ("system", V1.system, fenced(SYSTEM + " Give $count tips."),
         SkipReason.PLACEHOLDERS, "unknown placeholder $count"),
    ],
)  # fmt: skip
def test_an_answer_that_is_no_usable_template_is_skipped_with_its_reason(
    component: Component, parent: str, answer: str, reason: SkipReason, detail: str
) -> None:
    found = check_template(component, parent, answer, TRAINING)
    assert isinstance(found, Problem)
    assert found.reason == reason
    assert detail in found.detail


@pytest.mark.parametrize(
    ("component", "parent", "answer", "expected"),
    [
        ("system", V1.system, fenced(SYSTEM), SYSTEM),
        ("system", V1.system, fenced(SYSTEM, "text"), SYSTEM),  # a label of no part
        ("system", V1.system, f"Reasons: x.\n```{SYSTEM}```", SYSTEM),  # on one line
        # of several blocks, the one marked with the part asked for
        ("user", V1.user, fenced(SYSTEM, "system") + fenced(V1.user + "\nBe brief.", "user"),
         V1.user + "\nBe brief."),
        # the parent's own example persona (Tom) is not a training scenario's text
        ("system", FEW_SHOT.system, fenced(FEW_SHOT.system + "\nKeep it short."),
         FEW_SHOT.system.strip() + "\nKeep it short."),
        # a training person's name the parent already held is the parent's, not copied
        ("user", V1.user + " Maya", fenced(V1.user + " Maya, concretely."),
         V1.user + " Maya, concretely."),
    ],
)  # fmt: skip
def test_a_fenced_template_for_the_part_keeping_its_placeholders_is_a_proposal(
    component: Component, parent: str, answer: str, expected: str
) -> None:
    assert check_template(component, parent, answer, TRAINING) == expected.strip()


def test_the_reasons_come_with_the_proposal_and_skips_are_counted_per_reason() -> None:
    reflection = read_reflection("system", V1.system, fenced(SYSTEM), TRAINING)
    assert (reflection.text, reflection.reasons, reflection.problem) == (
        SYSTEM, "be concrete.", None
    )  # fmt: skip
    skipped = [
        Skipped(1, "v1", "system", "x", SkipReason.NO_TEMPLATE),
        Skipped(2, "v1", "user", "y", SkipReason.SCENARIO_TEXT),
        Skipped(3, "v1", "system", "z", SkipReason.NO_TEMPLATE),
    ]
    assert skipped_by_reason(skipped) == {"no fenced template": 2, "training scenario's text": 1}
