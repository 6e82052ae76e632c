"""Structured modes: which constraints a request asks for, and when a constrained retry runs.

The mode logic is checked with a scripted backend (fast, exact about what was sent); that
the real backends honour each constraint is checked on the embedded model and on
llama-cpp-python's OpenAI-compatible server below.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tipbench.backends import (
    STRUCTURED_MODES,
    Backend,
    BackendOptions,
    Constraint,
    Generation,
    GenerationRequest,
    ModelInfo,
    ModelSpec,
    StructuredMode,
    generate_structured,
    open_backend,
)
from tipbench.collect import parse_tips, tips_schema
from tipbench.suite import load_suite

FREE_LIST = "Here you go:\n1. Draft the intro now.\n2. Review PR 42 after lunch."
FREE_PROSE = "I am a helpful assistant and I like tips."
SCHEMA_JSON = '{"tips": ["Draft the intro now.", "Review PR 42 after lunch."]}'


class Scripted(Backend):
    """Answers each request with the next scripted text; keeps what it was sent."""

    def __init__(self, *answers: str) -> None:
        super().__init__(ModelSpec.parse("llamacpp:scripted.gguf"), BackendOptions())
        self.answers = list(answers)
        self.sent: list[GenerationRequest] = []

    def describe(self) -> ModelInfo:
        return ModelInfo(1, "scripted")

    def load(self) -> None: ...

    def unload(self) -> None: ...

    def generate(self, request: GenerationRequest) -> Generation:
        self.sent.append(request)
        return Generation(self.answers.pop(0), 10, 7, request.constraint != "none")


def request_for(constraint: Constraint) -> GenerationRequest:
    return GenerationRequest(
        messages=(("user", "Two tips, please."),),
        temperature=0.7,
        seed=42,
        max_tokens=64,
        json_schema=tips_schema(2) if constraint == "schema" else None,
        json_object=constraint == "json",
    )


def run(backend: Scripted, mode: StructuredMode) -> Any:
    return generate_structured(
        backend,
        mode,
        request_for,
        lambda text: parse_tips(text, 2),
        lambda parsed: len(parsed.tips) >= 2,
    )


def test_auto_keeps_a_free_answer_that_parses() -> None:
    backend = Scripted(FREE_LIST)
    answer = run(backend, "auto")

    assert [r.constraint for r in backend.sent] == ["none"]
    assert answer.path == "free"
    assert answer.parsed.tips == ("Draft the intro now.", "Review PR 42 after lunch.")
    assert answer.generation.structured is False


def test_auto_asks_again_with_the_schema_only_when_the_free_answer_does_not_parse() -> None:
    backend = Scripted(FREE_PROSE, SCHEMA_JSON)
    answer = run(backend, "auto")

    assert [r.constraint for r in backend.sent] == ["none", "schema"]
    assert backend.sent[1].json_schema == tips_schema(2)
    assert backend.sent[1].seed == backend.sent[0].seed  # the same request, constrained
    assert answer.path == "free+schema"
    assert answer.parsed.method == "json"
    # both requests' tokens count: they were both generated
    assert (answer.generation.prompt_tokens, answer.generation.completion_tokens) == (20, 14)
    assert answer.generation.text == SCHEMA_JSON and answer.generation.structured


def test_auto_retries_when_too_few_tips_parse() -> None:
    backend = Scripted("1. Draft the intro now.", SCHEMA_JSON)
    assert run(backend, "auto").path == "free+schema"


@pytest.mark.parametrize(
    ("mode", "constraint", "path"),
    [("schema", "schema", "schema"), ("json", "json", "json"), ("off", "none", "free")],
)
def test_fixed_modes_send_one_request_whatever_comes_back(
    mode: StructuredMode, constraint: str, path: str
) -> None:
    backend = Scripted(FREE_PROSE)
    answer = run(backend, mode)

    assert [r.constraint for r in backend.sent] == [constraint]
    assert answer.path == path
    assert answer.parsed.tips == ()  # unusable, returned for the caller to retry


def test_modes_are_the_documented_four() -> None:
    assert STRUCTURED_MODES == ("auto", "schema", "json", "off")


def tips_request(constraint: Constraint, n_tips: int = 2) -> GenerationRequest:
    suite = load_suite()
    return GenerationRequest(
        messages=suite.prompt("v1").render(suite.select_scenarios(1)[0], n_tips),
        temperature=0.7,
        seed=42,
        max_tokens=96,
        json_schema=tips_schema(n_tips) if constraint == "schema" else None,
        json_object=constraint == "json",
    )


@pytest.mark.slow
def test_embedded_model_answers_json_objects_in_json_mode() -> None:
    with open_backend(ModelSpec.parse("llamacpp:smollm2-135m")) as backend:
        answer = backend.generate(tips_request("json"))
    assert answer.structured is True
    assert isinstance(json.loads(answer.text), dict)
