"""A run's judging by the automatic tier, and how it is written to the run.

The scores (the judge's criteria, the rules' flags) go to the tier's metrics and tags
(`tipbench.tracking._scores`), with the settings that produced them; every answer the judge
model gave, parsable or not, goes to `auto_answers.json`; a run whose judging failed gets
the error as its `auto_judge_error` tag instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tipbench.auto_judge._requests import JUDGE_SEED, JUDGE_TEMPERATURE
from tipbench.backends import StructuredMode
from tipbench.tracking import (
    AUTO_ANSWERS_FILE,
    CellRun,
    CellTag,
    Scores,
    WriteJob,
    log_texts,
    record_scores,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

_ERROR_CHARS = 1000


@dataclass(frozen=True)
class Verdict:
    """One run's judging: every candidate's scores (the judge's criteria, the rules' flags)
    and the flags the judge gave itself, or the error that stopped it."""

    scores: dict[str, Scores] = field(default_factory=dict)
    resampled: dict[str, tuple[float, int]] = field(default_factory=dict)  # id -> (temp, seed)
    error: str | None = None
    answers: dict[str, list[RawAnswer]] = field(default_factory=dict)  # id -> every attempt
    own_flags: dict[str, tuple[int, int]] = field(default_factory=dict)  # where it gave them
    threads: int | None = None  # the embedded judge's threads (None: a server's)


@dataclass(frozen=True)
class RawAnswer:
    """One answer of the judge model as it gave it, with the settings that produced it."""

    text: str
    temperature: float
    seed: int

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "temperature": self.temperature, "seed": self.seed}


def write_scores(run: CellRun, verdict: Verdict, judged_by: str, mode: StructuredMode) -> WriteJob:
    """Write the verdict's scores (the judge's criteria, the rules' flags), and the flags
    the judge gave itself where it did (a free or JSON answer; the schema stops before)."""
    from mlflow.entities import RunTag

    run_id = run.run_id
    previous = run.scores_version("auto")
    recorded = verdict.scores
    tags = {
        CellTag.AUTO_JUDGE_TEMPERATURE: str(JUDGE_TEMPERATURE),
        CellTag.AUTO_JUDGE_SEED: str(JUDGE_SEED),
        CellTag.AUTO_JUDGE_STRUCTURED: mode,
    }
    if verdict.own_flags:
        own = {cid: list(flags) for cid, flags in verdict.own_flags.items()}
        tags[CellTag.AUTO_JUDGE_FLAGS] = json.dumps(own, separators=(",", ":"))
    if verdict.resampled:
        settings = {cid: list(setting) for cid, setting in verdict.resampled.items()}
        tags[CellTag.AUTO_JUDGE_RESAMPLED] = json.dumps(settings, separators=(",", ":"))
    if verdict.threads is not None:
        tags[CellTag.AUTO_JUDGE_LLAMA_THREADS] = str(verdict.threads)
    optional = (
        CellTag.AUTO_JUDGE_ERROR,
        CellTag.AUTO_JUDGE_RESAMPLED,
        CellTag.AUTO_JUDGE_FLAGS,
        CellTag.AUTO_JUDGE_LLAMA_THREADS,
    )
    stale = [tag for tag in optional if tag in run.extra_tags and tag not in tags]
    answers = answers_document(judged_by, verdict.answers)

    def write(client: MlflowClient) -> None:
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        version = record_scores(
            client,
            run_id,
            "auto",
            recorded,
            judged_by,
            previous,
            trace_id=run.trace_id,
            rationales={cid: tries[-1].text for cid, tries in verdict.answers.items() if tries},
        )
        log_texts(
            client, run_id, {AUTO_ANSWERS_FILE: answers, f"auto_answers/v{version}.json": answers}
        )
        for tag in stale:
            client.delete_tag(run_id, tag)

    return write


def answers_document(judge_model: str, answers: dict[str, list[RawAnswer]]) -> str:
    """The judge's raw answers per candidate (every attempt), as the artifact's JSON."""
    return json.dumps(
        {
            "judge_model": judge_model,
            "candidates": {
                cid: [a.to_dict() for a in attempts] for cid, attempts in answers.items()
            },
        },
        indent=2,
        ensure_ascii=False,
    )


def write_error(run_id: str, error: str, judge_model: str, verdict: Verdict) -> WriteJob:
    answers = answers_document(judge_model, verdict.answers)

    def write(client: MlflowClient) -> None:
        client.set_tag(run_id, CellTag.AUTO_JUDGE_ERROR, error[:_ERROR_CHARS])
        log_texts(client, run_id, {AUTO_ANSWERS_FILE: answers})

    return write
