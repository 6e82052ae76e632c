"""What a reflection answer must be to become a proposal, and why one is skipped.

A reflection model's answer is read, never trusted. It becomes a prompt version only if:

1. it holds one fenced template (```…```) for the part asked for: an answer without a fence
   is talk, not a template; an opening fence without a closing one was cut off; of several
   fenced blocks, the one marked with the part's name (```system) is taken, and a block
   marked as the other part is not this part's template;
2. the template differs from its parent's;
3. it keeps every placeholder of its parent's template and uses no other one
   (`$persona_name`, `$tasks` …: without them the prompt no longer says whom the tips are
   for);
4. it carries no training scenario's own text that its parent did not: the person's name,
   their description, a task, the time slot's context. The reflection model reads those
   scenarios; a template that copies them is fitted to the training scenarios, and on every
   other scenario it talks about someone else.

Each skipped proposal keeps its `SkipReason` (counted per reason) and a sentence saying what
was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tipbench.suite import PLACEHOLDERS, Component, Scenario, template_placeholders

_FENCE = "```"
#: A task's own words before its details: "Organic chemistry quiz Wednesday 09:00".
_TASK_HEAD = re.compile(r"^(.*?)\s*\(")
#: The shortest task head counted as copied text (shorter ones could be anyone's words).
MIN_TASK_CHARS = 12


class SkipReason(StrEnum):
    """Why a reflection answer did not become a proposal."""

    NO_TEMPLATE = "no fenced template"
    CUT_OFF = "template cut off"
    OTHER_PART = "not this part's template"
    UNCHANGED = "unchanged template"
    PLACEHOLDERS = "placeholder problem"
    SCENARIO_TEXT = "training scenario's text"


@dataclass(frozen=True)
class Problem:
    """Why an answer is not a usable template: its reason, and what exactly was wrong."""

    reason: SkipReason
    detail: str


def fenced_template(component: Component, answer: str) -> str | Problem:
    """The template in `answer` for `component`, or why there is none (rule 1)."""
    pieces = answer.split(_FENCE)
    if len(pieces) % 2 == 0:  # an odd number of fences: the last block never closed
        return Problem(SkipReason.CUT_OFF, "the template is cut off (no closing ```)")
    blocks = [block for block in map(_block, pieces[1::2]) if block[1]]
    if not blocks:
        return Problem(SkipReason.NO_TEMPLATE, "the answer holds no fenced template")
    marked = [text for label, text in blocks if label == component]
    if len(marked) == 1:
        return marked[0]
    if len(blocks) == 1:
        label, text = blocks[0]
        other = next((part for part in ("system", "user") if part == label), None)
        if other is not None and other != component:
            return Problem(
                SkipReason.OTHER_PART,
                f"the fenced template is marked as the {other} template, not the {component} one",
            )
        return text
    return Problem(
        SkipReason.OTHER_PART,
        f"the answer holds {len(blocks)} fenced blocks, none marked as the {component} template",
    )


def _block(inside: str) -> tuple[str, str]:
    """A fenced block's label (the info string of ```system) and its text."""
    first, newline, rest = inside.partition("\n")
    if not newline:  # ```one line```: no label
        return "", inside.strip()
    return first.strip().lower(), rest.strip()


def placeholder_problem(parent: str, proposed: str) -> Problem | None:
    """Why `proposed` cannot replace the template `parent` for its placeholders (rule 3)."""
    try:
        found = template_placeholders(proposed)
    except ValueError as exc:
        return Problem(SkipReason.PLACEHOLDERS, str(exc))
    if missing := sorted(template_placeholders(parent) - found):
        plural = "s" if len(missing) > 1 else ""
        named = ", ".join(f"${name}" for name in missing)
        return Problem(SkipReason.PLACEHOLDERS, f"it drops the placeholder{plural} {named}")
    if unknown := sorted(found - PLACEHOLDERS):
        return Problem(SkipReason.PLACEHOLDERS, f"unknown placeholder ${unknown[0]}")
    return None


def scenario_text_problem(
    parent: str, proposed: str, scenarios: Sequence[Scenario]
) -> Problem | None:
    """The training scenario text `proposed` carries and `parent` does not (rule 4)."""
    for scenario in scenarios:
        copied = [
            text
            for text in _own_texts(scenario)
            if _holds(proposed, text) and not _holds(parent, text)
        ]
        if copied:
            quoted = ", ".join(f"'{_short(text)}'" for text in copied[:2])
            more = f" and {len(copied) - 2} more" if len(copied) > 2 else ""
            return Problem(
                SkipReason.SCENARIO_TEXT,
                f"it copies training scenario {scenario.id}'s text ({quoted}{more})",
            )
    return None


def check_template(
    component: Component, parent: str, answer: str, scenarios: Sequence[Scenario]
) -> str | Problem:
    """The template `answer` proposes for `component` (its parent's template: `parent`), or
    the first rule it breaks (see the module's doc)."""
    found = fenced_template(component, answer)
    if isinstance(found, Problem):
        return found
    if found == parent.strip():
        return Problem(SkipReason.UNCHANGED, "the template is unchanged")
    problem = placeholder_problem(parent, found) or scenario_text_problem(parent, found, scenarios)
    return problem or found


def _own_texts(scenario: Scenario) -> Iterable[str]:
    """A scenario's own words: the name, the description, the time slot's context, and each
    task (its words before any details in parentheses, if long enough)."""
    yield scenario.persona_name
    yield scenario.persona_description
    yield scenario.slot_context
    for task in scenario.tasks:
        head = _TASK_HEAD.match(task)
        yield head.group(1) if head and len(head.group(1)) >= MIN_TASK_CHARS else task


def _holds(template: str, text: str) -> bool:
    """Whether `template` holds `text`: a whole word for a name, else anywhere, any case."""
    text = text.strip()
    if not text:
        return False
    if " " not in text:
        return re.search(rf"\b{re.escape(text)}\b", template) is not None
    return text.casefold() in template.casefold()


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
