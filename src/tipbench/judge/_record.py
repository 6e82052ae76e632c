"""Writing a tier's scores onto a cell run, keeping earlier versions."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tipbench.judge._scores import (
    Scores,
    Tier,
    encode_scores,
    judged_at_tag,
    judged_by_tag,
    run_metrics,
    scores_tag,
    version_tag,
)
from tipbench.tracking import log_texts

if TYPE_CHECKING:
    from mlflow import MlflowClient


def record_scores(
    client: MlflowClient,
    run_id: str,
    tier: Tier,
    scores: dict[str, Scores],
    judged_by: str,
    previous_version: int,
) -> int:
    """Write `scores` as version `previous_version + 1` of the tier's scores; return it.

    Metrics are logged at step = version, so MLflow's metric history keeps every earlier
    version; the per-candidate scores of each version stay as an artifact of their own.
    """
    from mlflow.entities import Metric, RunTag

    version = previous_version + 1
    now_ms = int(time.time() * 1000)
    judged_at = datetime.now(UTC).isoformat(timespec="seconds")
    tags = {
        scores_tag(tier): encode_scores(scores),
        version_tag(tier): str(version),
        judged_at_tag(tier): judged_at,
        judged_by_tag(tier): judged_by,
    }
    if tier == "human":
        tags |= {"judge_pending": "false", "judge_kind": "human"}
    document = json.dumps(
        {
            "tier": tier,
            "version": version,
            "judged_by": judged_by,
            "judged_at": judged_at,
            "candidates": {
                cid: s.as_dict() | {"composite": s.composite} for cid, s in scores.items()
            },
        },
        indent=2,
    )
    log_texts(
        client,
        run_id,
        {f"{tier}_scores.json": document, f"{tier}_scores/v{version}.json": document},
    )
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now_ms, version) for k, v in run_metrics(tier, scores).items()],
        tags=[RunTag(k, v) for k, v in tags.items()],
    )
    return version
