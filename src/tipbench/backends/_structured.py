"""How much structure to ask of a backend, and where to pay for it.

A grammar that constrains the answer (a JSON schema, or any JSON object) is evaluated on
every sampled token: with llama.cpp it halves the generation speed of a small model. The
structured modes choose where to pay for it:

- `auto` (the default): generate freely, parse robustly, and ask again with the schema
  only when the free answer is not usable; or ask with the schema at once, for a model whose
  free answers cost more than they save (collect chooses once per model, by counted tokens:
  `collect/_path_choice.py`);
- `schema`: always constrain to the JSON schema (tipbench's behaviour before modes existed);
- `json`: always constrain to some JSON object, without the schema;
- `off`: never constrain.

Each answer records its *path*, the constraints it took in order (`free`, `free+schema`,
`schema`, `json`), so results that came about differently stay apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar, get_args

from tipbench.backends._base import Backend, Constraint, Generation, GenerationRequest

StructuredMode = Literal["auto", "schema", "json", "off"]
STRUCTURED_MODES: tuple[StructuredMode, ...] = get_args(StructuredMode)
DEFAULT_STRUCTURED: StructuredMode = "auto"

_CONSTRAINTS: dict[StructuredMode, tuple[Constraint, ...]] = {
    "auto": ("none", "schema"),
    "schema": ("schema",),
    "json": ("json",),
    "off": ("none",),
}
_PATH_NAMES: dict[Constraint, str] = {"none": "free", "schema": "schema", "json": "json"}

T = TypeVar("T")


def constraints_for(mode: StructuredMode) -> tuple[Constraint, ...]:
    """The constraints a mode tries, in order, until an answer is usable."""
    return _CONSTRAINTS[mode]


def path_name(tried: tuple[Constraint, ...]) -> str:
    """The recorded path of an answer that took these constraints: `free+schema`, ..."""
    return "+".join(_PATH_NAMES[c] for c in tried)


@dataclass(frozen=True)
class RequestCost:
    """One request an answer made: its constraint, its time, whether its answer was usable."""

    constraint: Constraint
    latency_s: float
    usable: bool


@dataclass(frozen=True)
class RequestRecord:
    """One request a backend answered (or failed): what a trace's span shows of it."""

    request: GenerationRequest
    started_at: float  # epoch seconds
    latency_s: float
    generation: Generation | None = None  # None: the backend raised `error`
    error: str | None = None


@dataclass(frozen=True)
class StructuredAnswer(Generic[T]):
    """The usable answer (or the last one), with what every request of it cost."""

    generation: Generation  # the last answer's text; tokens summed over every request
    parsed: T
    path: str
    latency_s: float  # time inside the backend, summed over every request
    requests: tuple[RequestCost, ...] = ()


def generate_structured(
    backend: Backend,
    mode: StructuredMode,
    request_for: Callable[[Constraint], GenerationRequest],
    parse: Callable[[str], T],
    usable: Callable[[T], bool],
    constraints: tuple[Constraint, ...] | None = None,
    records: list[RequestRecord] | None = None,
    earlier: Callable[[GenerationRequest], RequestRecord | None] | None = None,
) -> StructuredAnswer[T]:
    """Ask with each of the mode's constraints (or `constraints`) in turn until
    `usable(parse(text))`.

    The last answer is returned even when it is not usable: the caller decides whether to
    retry. Backend errors propagate unchanged. Each request made, answered or failed, is
    appended to `records`. A request that `earlier` knows the answer to (asked before, e.g.
    by collect's probe) is not asked again: its record, with its own time, stands for it.
    """
    costs: list[RequestCost] = []
    prompt_tokens = completion_tokens = 0
    for constraint in constraints or constraints_for(mode):
        request = request_for(constraint)
        known = earlier(request) if earlier is not None else None
        if known is not None and known.generation is not None:
            generation, latency = known.generation, known.latency_s
            if records is not None:
                records.append(known)
        else:
            generation, latency = _ask(backend, request, records)
        prompt_tokens += generation.prompt_tokens
        completion_tokens += generation.completion_tokens
        parsed = parse(generation.text)
        costs.append(RequestCost(constraint, latency, usable(parsed)))
        if costs[-1].usable:
            break
    total = Generation(generation.text, prompt_tokens, completion_tokens, generation.structured)
    tried = tuple(cost.constraint for cost in costs)
    spent = sum(cost.latency_s for cost in costs)
    return StructuredAnswer(total, parsed, path_name(tried), spent, tuple(costs))


def _ask(
    backend: Backend, request: GenerationRequest, records: list[RequestRecord] | None
) -> tuple[Generation, float]:
    """Ask `backend` once: its answer and latency. The request's record, answered or not,
    is appended to `records`."""
    started_at, started = time.time(), time.perf_counter()
    try:
        generation = backend.generate(request)
    except BaseException as exc:
        if records is not None:
            spent = time.perf_counter() - started
            records.append(RequestRecord(request, started_at, spent, error=str(exc)))
        raise
    latency = time.perf_counter() - started
    if records is not None:
        records.append(RequestRecord(request, started_at, latency, generation))
    return generation, latency
