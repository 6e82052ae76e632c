"""What the automatic judge is asked, and how its answer is read.

The system message is the whole rubric and the answer format; it is the same for every
candidate, so llama.cpp (and servers with a prefix cache) evaluate it once and reuse it.
The user message holds what changes: the scenario first (the same for every candidate of a
cell, so it is reused too while a cell's candidates are judged), then the one tip to score.

The answer format names the criteria, then the flags. Under the score schema the answer
ends after the criteria (`score_schema`): the rules own the flags, and the criteria come
first, so they are exactly what the judge would have answered in the whole object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tipbench.backends import AnswerForm
from tipbench.suite import CRITERIA, FLAGS, SCORE_NAMES, Message, levels
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
    """The JSON schema of the judge's answer: each criterion an integer enum, in the answer
    format's order, and nothing after them.

    The prompt asks for the flags after the criteria (the prompt every calibration was made
    with); the schema ends the object before them. Generation runs left to right, so the
    criteria are sampled from the same context and the same grammar as in the whole
    object (at temperature 0, or with the same seed): the same judgments, in 20 answer
    tokens instead of 35 on SmolLM2's tokenizer. The flags are the rules' in the tier
    anyway (only a human overrides them); a judge that answers them unasked (free or JSON
    mode) still has them kept beside (`JudgeAnswer.own_flags`).
    """
    return {
        "type": "object",
        "properties": {
            name: {"type": "integer", "enum": list(SCORE_RANGES[name])} for name in CRITERIA
        },
        "required": list(CRITERIA),
        "additionalProperties": False,
    }


def score_form() -> AnswerForm:
    """The score schema's answers as the judge writes them (`{ "relevance": 4, ...}`): a
    backend that can reads the criteria in one model call each (`backends/_forms.py`)."""
    form: list[str | tuple[str, ...]] = []
    for index, name in enumerate(CRITERIA):
        form += [f'{", " if index else "{ "}"{name}": ', tuple(map(str, SCORE_RANGES[name]))]
    return (*form, "}")


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's answer for one candidate: the criteria, and its own flags if it gave them."""

    relevance: int
    actionability: int
    tone: int
    format_ok: int | None = None
    overlong: int | None = None

    @property
    def own_flags(self) -> tuple[int, int] | None:
        """(format_ok, overlong) as the judge answered them, or None if it did not."""
        if self.format_ok is None or self.overlong is None:
            return None
        return self.format_ok, self.overlong

    def with_flags(self, format_ok: int, overlong: int) -> Scores:
        """The scores the tier records: the judge's criteria with the given (rules') flags."""
        return Scores(self.relevance, self.actionability, self.tone, format_ok, overlong)


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


def parse_scores(text: str) -> JudgeAnswer | None:
    """The scores in a judge's answer, or None if it holds no valid answer.

    The first JSON object in the text counts (code fences and chatter around it are fine);
    it must give every criterion as an integer (or an integral number or numeric string)
    within its range, and the flags likewise if it gives them (both, or they are not
    counted as given). Anything else is unparsable: a judge that says 7 out of 5 is not
    trusted.
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


def _scores(answer: dict[str, Any]) -> JudgeAnswer | None:
    values: dict[str, int] = {}
    for name in SCORE_NAMES:
        if name in FLAGS and name not in answer:
            continue
        value = _integer(answer.get(name))
        if value is None or value not in SCORE_RANGES[name]:
            return None
        values[name] = value
    if not all(name in values for name in FLAGS):
        values = {name: values[name] for name in CRITERIA}
    return JudgeAnswer(**values)


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
