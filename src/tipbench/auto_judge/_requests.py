"""The automatic judge's requests: what each candidate is asked with, and in which order.

Every request starts with the same system message (the rubric, ~1,600 tokens); a backend
with a prefix cache (llama.cpp in-process, llama.cpp's server, Ollama) evaluates it once per
model load and reuses it. The user message starts with the scenario, which the candidates
of a cell share, and every prompt version of the grid shares with the same scenario: the
judge takes a model's runs scenario by scenario (`judging_order`), so consecutive requests
share the scenario too and only the candidate is new to the model. What each request asks
is the same whatever the order.

`warm_up_request` asks with the shared system message alone, right after the model loads
(`Backend.warm`): the rubric is then evaluated while the progress says the judge is
loading, not during the first candidate.
"""

from __future__ import annotations

from collections.abc import Iterable

from tipbench.auto_judge._prompt import score_form, score_schema, system_message
from tipbench.backends import Constraint, GenerationRequest
from tipbench.suite import Message
from tipbench.tracking import CellRun

__all__ = [
    "JUDGE_MAX_TOKENS",
    "JUDGE_SEED",
    "JUDGE_TEMPERATURE",
    "RESAMPLE_TEMPERATURE",
    "judge_request",
    "judging_order",
    "warm_up_request",
]

JUDGE_TEMPERATURE = 0.0
JUDGE_SEED = 42
#: An answer is ~20 tokens (the criteria); the schema's grammar still allows some
#: whitespace, and a free answer names the flags too.
JUDGE_MAX_TOKENS = 64
#: A retry after unparsable output samples (with the next seed): at temperature 0 the
#: same request would give the same answer again. Such candidates are listed in a tag.
RESAMPLE_TEMPERATURE = 0.3


def judging_order(runs: Iterable[CellRun]) -> list[CellRun]:
    """The runs in the order the judge takes them: by model, then scenario, then prompt
    version (then name): consecutive runs share their scenario's part of the request."""
    return sorted(runs, key=lambda r: (r.model, r.scenario_id, r.prompt_version, r.label))


def judge_request(
    messages: tuple[Message, ...], constraint: Constraint, temperature: float, seed: int
) -> GenerationRequest:
    """The request for one candidate's scores under `constraint`: the score schema, any
    JSON object, or none."""
    schema = score_schema() if constraint == "schema" else None
    return GenerationRequest(
        messages,
        temperature,
        seed,
        JUDGE_MAX_TOKENS,
        schema,
        constraint == "json",
        form=score_form() if schema else None,
    )


def warm_up_request(rubric_text: str) -> GenerationRequest:
    """A request that shares every judge request's beginning, the rubric, and asks for one
    token: evaluating it leaves the rubric in a prefix cache."""
    messages: tuple[Message, ...] = (("system", system_message(rubric_text)), ("user", ""))
    return GenerationRequest(messages, JUDGE_TEMPERATURE, JUDGE_SEED, 1)
