"""What a cell's MLflow run holds: params, tags, metrics and artifacts (SPEC §3)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from tipbench.backends import Generation
from tipbench.collect._diversity import diversity
from tipbench.collect._grid import Cell
from tipbench.collect._parse import ParseMethod
from tipbench.suite import Rubric
from tipbench.tracking import KIND_CELL, KIND_TAG, RunRecord

CANDIDATES_FILE = "candidates.json"
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

    @property
    def ok(self) -> bool:
        return self.error is None


def build_record(
    outcome: CellOutcome, rubric: Rubric, *, with_diversity: bool, replaces: tuple[str, ...]
) -> RunRecord:
    """The run that records `outcome`."""
    cell = outcome.cell
    end = outcome.finished_at or time.time()
    params = {
        "model": str(cell.model),
        "backend": cell.model.backend,
        "prompt_version": cell.prompt.version,
        "scenario_id": cell.scenario.id,
        "temperature": str(cell.temperature),
        "n_tips": str(cell.n_tips),
        "seed": str(cell.seed),
        "max_tokens": str(cell.max_tokens),
    }
    tags = {
        KIND_TAG: KIND_CELL,
        "cell_key": cell.key,
        "cell_status": "ok" if outcome.ok else "failed",
        "scenario_hash": cell.scenario.content_hash,
        "prompt_hash": cell.prompt.template_hash,
        "suite": cell.suite,
        "rubric": rubric.id,
        "model_identity": cell.model_identity,
        "judge_pending": "true" if outcome.ok else "false",
    }
    messages = cell.prompt.render(cell.scenario, cell.n_tips)
    artifacts = {
        "prompt.txt": "\n\n".join(f"[{role}]\n{content}" for role, content in messages),
        "rubric.md": rubric.text(),
    }
    metrics: dict[str, float] = {"attempts": outcome.attempts}
    gen = outcome.generation
    if gen is not None:
        artifacts["response.txt"] = gen.text
        tokens_per_s = gen.completion_tokens / outcome.latency_s if outcome.latency_s else 0.0
        metrics |= {
            "latency_s": outcome.latency_s,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
            "tokens_per_s": tokens_per_s,
            "cached": float(outcome.cached),
        }
    if outcome.ok:
        candidates: list[dict[str, str | int]] = [
            {
                "id": f"c{i}",
                "text": tip,
                "format_ok": rubric.format_ok(tip),
                "overlong": rubric.overlong(tip),
            }
            for i, tip in enumerate(outcome.tips, start=1)
        ]
        artifacts[CANDIDATES_FILE] = json.dumps(
            {
                "cell_key": cell.key,
                "scenario": cell.scenario.context(),
                "parse_method": outcome.parse_method,
                "candidates": candidates,
            },
            indent=2,
            ensure_ascii=False,
        )
        n = len(candidates)
        metrics |= {
            "parse_success": 1.0,
            "candidate_count": n,
            "format_ok_rate": sum(rubric.format_ok(tip) for tip in outcome.tips) / n,
            "overlong_rate": sum(rubric.overlong(tip) for tip in outcome.tips) / n,
        }
        if with_diversity:
            metrics["diversity"] = diversity(outcome.tips)
        tags["parse_method"] = outcome.parse_method
    else:
        metrics |= {"parse_success": 0.0, "candidate_count": 0}
        tags["error"] = (outcome.error or "")[:_ERROR_CHARS]
    return RunRecord(
        run_name=cell.name,
        params=params,
        tags=tags,
        metrics=metrics,
        artifacts=artifacts,
        status="FINISHED" if outcome.ok else "FAILED",
        start_ms=int((end - outcome.latency_s) * 1000),
        end_ms=int(end * 1000),
        replaces=replaces,
    )
