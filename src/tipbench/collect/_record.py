"""A cell's outcome as the run that records it (the layout: `tipbench.tracking._layout`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tipbench.backends import Generation, RequestRecord, path_name
from tipbench.collect._diversity import diversity
from tipbench.collect._grid import Cell
from tipbench.collect._parse import ParseMethod
from tipbench.suite import Rubric
from tipbench.tracking import (
    CANDIDATES_FILE,
    CELL_FAILED,
    CELL_OK,
    PROMPT_FILE,
    RESPONSE_FILE,
    RUBRIC_FILE,
    CandidatesFile,
    CellMetric,
    CellParam,
    CellRun,
    CellTag,
    CellTrace,
    RecordedCandidate,
    RequestSpan,
    RunRecord,
    rule_assessments,
)

_ERROR_CHARS = 1000


@dataclass(frozen=True)
class CellOutcome:
    """The result of one cell: candidates, or the error after the last attempt."""

    cell: Cell
    tips: tuple[str, ...] = ()
    parse_method: ParseMethod = "none"
    generation: Generation | None = None
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = False
    error: str | None = None
    finished_at: float = 0.0
    path: str = ""  # how the answer came about: free, free+rest, free+schema, schema, json
    requests: tuple[RequestRecord, ...] = ()  # every request made (none for a cached answer)
    threads: int | None = None  # the embedded model's threads (None: a server's, or cached)

    @property
    def ok(self) -> bool:
        return self.error is None


def build_record(
    outcome: CellOutcome,
    rubric: Rubric,
    *,
    with_diversity: bool,
    replaces: tuple[str, ...],
    trace_id: str = "",
) -> RunRecord:
    """The run that records `outcome` (and names its trace, if it has one)."""
    cell = outcome.cell
    end = outcome.finished_at or time.time()
    layout = CellRun(
        model=str(cell.model),
        backend=cell.model.backend,
        prompt_version=cell.prompt.version,
        scenario_id=cell.scenario.id,
        settings={
            CellParam.TEMPERATURE: str(cell.temperature),
            CellParam.N_TIPS: str(cell.n_tips),
            CellParam.SEED: str(cell.seed),
            CellParam.MAX_TOKENS: str(cell.max_tokens),
            CellParam.STRUCTURED: cell.structured,
        },
        cell_key=cell.key,
        cell_status=CELL_OK if outcome.ok else CELL_FAILED,
        scenario_hash=cell.scenario.content_hash,
        prompt_hash=cell.prompt.template_hash,
        suite=cell.suite,
        rubric=rubric.id,
        model_identity=cell.model_identity,
        trace_id=trace_id,
        judge_pending=outcome.ok,
        parse_method=outcome.parse_method if outcome.ok else "",
        generation_path=outcome.path,
        error=None if outcome.ok else (outcome.error or "")[:_ERROR_CHARS],
    )
    messages = cell.prompt.render(cell.scenario, cell.n_tips)
    artifacts = {
        PROMPT_FILE: "\n\n".join(f"[{role}]\n{content}" for role, content in messages),
        RUBRIC_FILE: rubric.text(),
    }
    metrics: dict[str, float] = {CellMetric.ATTEMPTS: outcome.attempts}
    gen = outcome.generation
    if gen is not None:
        artifacts[RESPONSE_FILE] = gen.text
        tokens_per_s = gen.completion_tokens / outcome.latency_s if outcome.latency_s else 0.0
        metrics |= {
            CellMetric.LATENCY_S: outcome.latency_s,
            CellMetric.PROMPT_TOKENS: gen.prompt_tokens,
            CellMetric.COMPLETION_TOKENS: gen.completion_tokens,
            CellMetric.TOKENS_PER_S: tokens_per_s,
            CellMetric.CACHED: float(outcome.cached),
        }
    if outcome.ok:
        document = candidates_file(outcome, rubric)
        artifacts[CANDIDATES_FILE] = document.dump()
        n = len(document.candidates)
        metrics |= {
            CellMetric.PARSE_SUCCESS: 1.0,
            CellMetric.CANDIDATE_COUNT: n,
            CellMetric.FORMAT_OK_RATE: sum(c.format_ok for c in document.candidates) / n,
            CellMetric.OVERLONG_RATE: sum(c.overlong for c in document.candidates) / n,
        }
        if with_diversity:
            metrics[CellMetric.DIVERSITY] = diversity(outcome.tips)
    else:
        metrics |= {CellMetric.PARSE_SUCCESS: 0.0, CellMetric.CANDIDATE_COUNT: 0}
    tags = layout.tags()
    if outcome.threads is not None:
        tags[CellTag.LLAMA_THREADS] = str(outcome.threads)
    return RunRecord(
        run_name=cell.name,
        params=layout.params(),
        tags=tags,
        metrics=metrics,
        artifacts=artifacts,
        status="FINISHED" if outcome.ok else "FAILED",
        start_ms=int((end - outcome.latency_s) * 1000),
        end_ms=int(end * 1000),
        replaces=replaces,
    )


def candidates_file(outcome: CellOutcome, rubric: Rubric) -> CandidatesFile:
    """`candidates.json` of a successful cell: its candidates with the rules' flags."""
    cell = outcome.cell
    return CandidatesFile(
        cell_key=cell.key,
        scenario=cell.scenario.context(),
        parse_method=outcome.parse_method,
        candidates=tuple(
            RecordedCandidate(
                id=f"c{i}",
                text=tip,
                format_ok=rubric.format_ok(tip),
                overlong=rubric.overlong(tip),
            )
            for i, tip in enumerate(outcome.tips, start=1)
        ),
    )


def build_trace(outcome: CellOutcome, rubric: Rubric, trace_id: str) -> CellTrace:
    """The trace of `outcome`'s generation: a span per request, the candidates, and the
    rules' flags as CODE assessments."""
    cell = outcome.cell
    end = outcome.finished_at or time.time()
    candidates = candidates_file(outcome, rubric).candidates if outcome.ok else ()
    requests = [_request_span(number, r) for number, r in enumerate(outcome.requests, start=1)]
    gen = outcome.generation
    if outcome.cached and gen is not None:
        messages = cell.prompt.render(cell.scenario, cell.n_tips)
        requests.append(
            RequestSpan(
                "cached answer",
                end - outcome.latency_s,
                outcome.latency_s,
                messages,
                {"cached": True, "temperature": cell.temperature, "seed": cell.seed},
                gen.text,
                gen.prompt_tokens,
                gen.completion_tokens,
            )
        )
    start = min([end - outcome.latency_s, *(r.started_at for r in requests)])
    attributes = {
        "generation_path": outcome.path,
        "parse_method": outcome.parse_method,
        "attempts": outcome.attempts,
        "cached": outcome.cached,
    }
    flags = {c.id: {"format_ok": c.format_ok, "overlong": c.overlong} for c in candidates}
    return CellTrace(
        trace_id=trace_id,
        name=cell.name,
        model=str(cell.model),
        prompt_version=cell.prompt.version,
        scenario_id=cell.scenario.id,
        cell_key=cell.key,
        scenario=cell.scenario.context(),
        messages=cell.prompt.render(cell.scenario, cell.n_tips),
        candidates=tuple(c.model_dump() for c in candidates),
        started_at=start,
        ended_at=end,
        requests=tuple(requests),
        attributes=attributes,
        error=None if outcome.ok else (outcome.error or "")[:_ERROR_CHARS],
        cached=outcome.cached,
        assessments=tuple(rule_assessments(trace_id, flags, rubric.id)),
    )


def _request_span(number: int, record: RequestRecord) -> RequestSpan:
    request, generation = record.request, record.generation
    constraint = path_name((request.constraint,))
    return RequestSpan(
        name=f"request {number}: {constraint}",
        started_at=record.started_at,
        latency_s=record.latency_s,
        messages=request.messages,
        settings={
            "constraint": constraint,
            "temperature": request.temperature,
            "seed": request.seed,
            "max_tokens": request.max_tokens,
        },
        text=generation.text if generation is not None else None,
        prompt_tokens=generation.prompt_tokens if generation is not None else 0,
        completion_tokens=generation.completion_tokens if generation is not None else 0,
        error=record.error,
    )
