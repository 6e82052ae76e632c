"""What the automatic judge is asked, and how its answer is read.

The system message is the whole rubric and the answer format; it is the same for every
candidate, so llama.cpp (and servers with a prefix cache) evaluate it once and reuse it.
The user message holds what changes: the scenario and the one tip to score.
"""

from __future__ import annotations

import json
from typing import Any

from tipbench.suite import SCORE_NAMES, Message, levels
from tipbench.tracking import Scores

#: The answer's range per score: 1–5 for the criteria, 0/1 for the flags (the rubric's).
SCORE_RANGES: dict[str, tuple[int, ...]] = {name: levels(name) for name in SCORE_NAMES}

_ANSWER_FORMAT = """\
# Your task

You are the judge. You get one scenario and one candidate tip written for it. Score the tip
against the rubric above and answer with one JSON object and nothing else:

{"relevance": 1-5, "actionability": 1-5, "tone": 1-5, "format_ok": 0 or 1, "overlong": 0 or 1}

The scenario comes with the flags that the deterministic rules computed; repeat them unless
the rule clearly misjudged the tip."""


def score_schema() -> dict[str, Any]:
    """The JSON schema of the judge's answer: integer enums, every score required."""
    return {
        "type": "object",
        "properties": {
            name: {"type": "integer", "enum": list(SCORE_RANGES[name])} for name in SCORE_NAMES
        },
        "required": list(SCORE_NAMES),
        "additionalProperties": False,
    }


def system_message(rubric_text: str) -> str:
    """The rubric, then the answer format: the long shared prefix of every request."""
    return f"{rubric_text.strip()}\n\n{_ANSWER_FORMAT}"


def user_message(scenario: dict[str, Any], candidate: dict[str, Any]) -> str:
    """The scenario a candidate was written for, the candidate, and its rule-based flags."""
    tasks = "\n".join(f"- {task}" for task in scenario.get("tasks", []))
    return (
        f"# Scenario {scenario.get('id', '')}\n\n"
        f"Person: {scenario.get('persona_name', '')}, {scenario.get('persona_description', '')}\n"
        f"Time: {scenario.get('time_slot_label', '')}, {scenario.get('local_time', '')}. "
        f"{scenario.get('slot_context', '')}\n"
        f"Tasks:\n{tasks}\n\n"
        f"# Candidate tip\n\n{candidate['text']}\n\n"
        f"# Flags from the rules\n\n"
        f"format_ok: {int(candidate.get('format_ok', 1))}, "
        f"overlong: {int(candidate.get('overlong', 0))}\n\n"
        "Answer with the JSON object only."
    )


def judge_messages(
    rubric_text: str, scenario: dict[str, Any], candidate: dict[str, Any]
) -> tuple[Message, ...]:
    """The chat messages that ask for one candidate's scores."""
    return (("system", system_message(rubric_text)), ("user", user_message(scenario, candidate)))


def parse_scores(text: str) -> Scores | None:
    """The scores in a judge's answer, or None if it holds no valid answer.

    The first JSON object in the text counts (code fences and chatter around it are fine);
    it must give every score as an integer (or an integral number or numeric string) within
    its range. Anything else is unparsable: a judge that says 7 out of 5 is not trusted.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        return _scores(value) if isinstance(value, dict) else None
    return None


def _scores(answer: dict[str, Any]) -> Scores | None:
    values = []
    for name in SCORE_NAMES:
        value = _integer(answer.get(name))
        if value is None or value not in SCORE_RANGES[name]:
            return None
        values.append(value)
    return Scores(*values)


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
