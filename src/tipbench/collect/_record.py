"""A cell's outcome as the run that records it (the layout: `tipbench.tracking._cell_run`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tipbench.backends import Generation
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
    RecordedCandidate,
    RunRecord,
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
    path: str = ""  # the constraints the answer took: free, free+schema, schema, json

    @property
    def ok(self) -> bool:
        return self.error is None


def build_record(
    outcome: CellOutcome, rubric: Rubric, *, with_diversity: bool, replaces: tuple[str, ...]
) -> RunRecord:
    """The run that records `outcome`."""
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
        document = CandidatesFile(
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
    return RunRecord(
        run_name=cell.name,
        params=layout.params(),
        tags=layout.tags(),
        metrics=metrics,
        artifacts=artifacts,
        status="FINISHED" if outcome.ok else "FAILED",
        start_ms=int((end - outcome.latency_s) * 1000),
        end_ms=int(end * 1000),
        replaces=replaces,
    )
