"""A cell's answer: its requests in turn, a free answer completed by a constrained rest.

On the free-first path (`auto`) a cell is asked freely first. A free answer that holds
`n_tips` tips is the cell's answer. One that holds k of them, 0 < k < `n_tips`, keeps them:
the schema request that follows asks only for the `n_tips` − k missing tips (the same
messages, so a server's cached prompt serves it; the schema holds that many items), and the
cell's tips are the k free ones and the rest, its path `free+rest`. A constrained token costs
more than a free one (`Backend.constrained_token_cost`), so a shorter constrained answer
saves what the free answer already paid for. A free answer with no tip is followed by the
whole schema request, as before (`free+schema`), as is one whose whole schema answer the
probe asked already (`collect/_probe.py` hands it over).

A free answer the model did not end itself (stopped at the token limit, or by `AnswerDone`
as run away) holds only the tips it finished: the line it was cut off in is half a
sentence, so the rest asks for that tip too (`cut_off`, `parse_tips(cut=True)`).

The cell's text holds both answers, joined by `REST_MARK` (`CUT_REST_MARK` after a cut-off
free answer; `parse_answer` reads it back, e.g. from the response cache), so `response.txt`
shows everything the model wrote for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tipbench.backends import (
    Backend,
    Constraint,
    Generation,
    GenerationRequest,
    RequestRecord,
    StructuredAnswer,
    constraints_for,
    generate_structured,
)
from tipbench.collect._grid import Cell
from tipbench.collect._parse import AnswerDone, ParsedTips, parse_answer, with_rest
from tipbench.collect._path_choice import FREE_FIRST

REST_PATH = "free+rest"

Earlier = Callable[[GenerationRequest], RequestRecord | None]


def answer_cell(
    backend: Backend,
    cell: Cell,
    attempt: int,
    constraints: tuple[Constraint, ...] | None,
    records: list[RequestRecord],
    earlier: Earlier | None = None,
) -> StructuredAnswer[ParsedTips]:
    """Ask `cell`'s requests (attempt `attempt`) with `constraints` [default: its mode's]
    until it holds `n_tips` tips; a free answer short of them is completed by a constrained
    rest (see the module). Every request is appended to `records`; `earlier` answers the
    requests asked before (collect's probe)."""
    n = cell.n_tips

    def ask(
        tried: tuple[Constraint, ...], tips: int | None = None, known: Earlier | None = earlier
    ) -> StructuredAnswer[ParsedTips]:
        wanted = tips or n
        return generate_structured(
            backend,
            cell.structured,
            lambda constraint: cell.request(attempt, constraint, tips=tips),
            lambda text: parse_answer(text, wanted),
            lambda parsed: len(parsed.tips) >= wanted,
            tried,
            records,
            known,
        )

    tried = constraints or constraints_for(cell.structured)
    if tried != FREE_FIRST:
        return _complete_tips(ask(tried), cell)
    free = _complete_tips(ask(tried[:1]), cell)
    found = len(free.parsed.tips)
    if found >= n:
        return free
    # the whole schema answer, if the probe asked it already, completes the cell as well
    whole = earlier(cell.request(attempt, tried[1])) if earlier is not None else None
    if found == 0 or whole is not None:
        rest = ask(tried[1:], known=(lambda _: whole) if whole is not None else earlier)
        return _joined(free, rest, rest.generation.text, rest.parsed, path="free+schema")
    rest = ask(tried[1:], tips=n - found)
    text = with_rest(free.generation.text, rest.generation.text, cut_off(free.generation, cell))
    return _joined(free, rest, text, parse_answer(text, n), path=REST_PATH)


def cut_off(generation: Generation, cell: Cell) -> bool:
    """Whether the model was stopped before it ended `generation` (one answer of `cell`):
    at the token limit, or by `AnswerDone` (run away, or its tips all complete)."""
    at_limit = generation.completion_tokens >= cell.max_tokens
    return at_limit or AnswerDone(cell.n_tips)(generation.text)


def _complete_tips(
    answer: StructuredAnswer[ParsedTips], cell: Cell
) -> StructuredAnswer[ParsedTips]:
    """`answer` with the tips it holds whole: a line it was cut off in is no tip."""
    if not cut_off(answer.generation, cell):
        return answer
    return replace(answer, parsed=parse_answer(answer.generation.text, cell.n_tips, cut=True))


def _joined(
    free: StructuredAnswer[ParsedTips],
    rest: StructuredAnswer[ParsedTips],
    text: str,
    parsed: ParsedTips,
    path: str,
) -> StructuredAnswer[ParsedTips]:
    """The cell's answer from its free answer and the constrained one after it."""
    first, last = free.generation, rest.generation
    generation = Generation(
        text,
        first.prompt_tokens + last.prompt_tokens,
        first.completion_tokens + last.completion_tokens,
        last.structured,
    )
    spent = free.latency_s + rest.latency_s
    return StructuredAnswer(generation, parsed, path, spent, free.requests + rest.requests)
