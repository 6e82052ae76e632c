"""Writing a tier's scores (or the human's draft) onto a cell run, keeping earlier versions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tipbench.tracking._assessments import log_scores
from tipbench.tracking._cell_run import CellRun
from tipbench.tracking._scores import (
    DRAFT_AT_TAG,
    DRAFT_BY_TAG,
    DRAFT_TAG,
    Draft,
    ScoreFields,
    Scores,
    Tier,
    draft_fields,
    score_fields,
)
from tipbench.tracking._writer import log_texts

if TYPE_CHECKING:
    from mlflow import MlflowClient


def record_scores(
    client: MlflowClient,
    run_id: str,
    tier: Tier,
    scores: Mapping[str, Scores],
    judged_by: str,
    previous_version: int,
    source: str = "",
    *,
    trace_id: str = "",
    rationales: Mapping[str, str] | None = None,
) -> int:
    """Write `scores` as version `previous_version + 1` of the tier's scores; return it.

    Metrics are logged at step = version, so MLflow's metric history keeps every earlier
    version; the per-candidate scores of each version stay as an artifact of their own.
    `source` (human tier) says where they came from (a judge file's export id, the page).
    A run with a trace (`trace_id`) also gets each changed score as an assessment on its
    candidate's span, first: logging them again is a no-op, so a failed write is safe to
    retry whole. `rationales` (automatic tier): the judge's answer per candidate.
    """
    fields = score_fields(tier, scores, judged_by, previous_version + 1, source=source)
    if trace_id:
        log_scores(client, trace_id, tier, scores, judged_by, fields.version, rationales)
    _log(client, run_id, fields)
    return fields.version


def record_draft(
    client: MlflowClient,
    run_id: str,
    draft: Draft,
    judged_by: str,
    previous_version: int,
    source: str,
) -> int:
    """Write a pending run's partial human scores as version `previous_version + 1`."""
    fields = draft_fields(draft, judged_by, previous_version + 1, source)
    _log(client, run_id, fields)
    return fields.version


def clear_draft(client: MlflowClient, run: CellRun) -> None:
    """Remove a draft once the run's complete scores are written (its version stays)."""
    for tag in (DRAFT_TAG, DRAFT_BY_TAG, DRAFT_AT_TAG):
        if tag in run.extra_tags:
            client.delete_tag(run.run_id, tag)


def _log(client: MlflowClient, run_id: str, fields: ScoreFields) -> None:
    from mlflow.entities import Metric, RunTag

    now_ms = int(time.time() * 1000)
    log_texts(client, run_id, fields.artifacts)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now_ms, fields.version) for k, v in fields.metrics.items()],
        tags=[RunTag(k, v) for k, v in fields.tags.items()],
    )
