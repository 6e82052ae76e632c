"""Writing a tier's scores onto a cell run, keeping earlier versions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tipbench.tracking import Scores, Tier, log_texts, score_fields

if TYPE_CHECKING:
    from mlflow import MlflowClient


def record_scores(
    client: MlflowClient,
    run_id: str,
    tier: Tier,
    scores: Mapping[str, Scores],
    judged_by: str,
    previous_version: int,
) -> int:
    """Write `scores` as version `previous_version + 1` of the tier's scores; return it.

    Metrics are logged at step = version, so MLflow's metric history keeps every earlier
    version; the per-candidate scores of each version stay as an artifact of their own.
    """
    from mlflow.entities import Metric, RunTag

    fields = score_fields(tier, scores, judged_by, previous_version + 1)
    now_ms = int(time.time() * 1000)
    log_texts(client, run_id, fields.artifacts)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now_ms, fields.version) for k, v in fields.metrics.items()],
        tags=[RunTag(k, v) for k, v in fields.tags.items()],
    )
    return fields.version
