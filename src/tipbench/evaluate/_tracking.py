"""Recording an off-policy evaluation as one MLflow run (`tipbench.kind=policy_evaluation`):
params (where the log came from, the policies, the clip and the minimum), metrics per policy
and estimator (`dr.<policy>`, `dr_low.<policy>`, `dr_high.<policy>`, `ess.<policy>`,
`clipped.<policy>`, `clipped_weight.<policy>`; an estimator "biased: clipped" has none; the
observed `observed.<policy>` of every deciding policy; the logging `floor`) and the whole
report as `evaluation.json`."""

from __future__ import annotations

import json
import math

from tipbench.evaluate._estimators import CLIP_WEIGHT, MIN_DECISIONS
from tipbench.evaluate._evaluate import EvaluationReport
from tipbench.tracking import KIND_TAG, RunRecord, TrackingStore, record_run

KIND_EVALUATION = "policy_evaluation"
EVALUATION_FILE = "evaluation.json"


def evaluation_record(
    report: EvaluationReport,
    source: str,
    clip: float = CLIP_WEIGHT,
    min_decisions: int = MIN_DECISIONS,
) -> RunRecord:
    metrics: dict[str, float] = {
        "decisions": report.decisions,
        "rewarded": report.rewarded,
        "floor": report.floor,
    }
    for observed in report.observed:
        metrics[f"observed.{observed.policy}"] = observed.value.value
    for evaluation in report.policies:
        metrics[f"ess.{evaluation.policy}"] = evaluation.ess
        metrics[f"clipped.{evaluation.policy}"] = evaluation.clipped
        metrics[f"clipped_weight.{evaluation.policy}"] = evaluation.clipped_weight
        for name, estimate in evaluation.estimates.items():
            metrics[f"{name}.{evaluation.policy}"] = estimate.value
            metrics[f"{name}_low.{evaluation.policy}"] = estimate.low
            metrics[f"{name}_high.{evaluation.policy}"] = estimate.high
    return RunRecord(
        run_name=f"evaluate {','.join(p.policy for p in report.policies) or 'nothing'}",
        params={
            "source": source,
            "policies": ",".join(p.policy for p in report.policies),
            "live": report.live or "",
            "clip": str(clip),
            "min_decisions": str(min_decisions),
        },
        tags={
            KIND_TAG: KIND_EVALUATION,
            **{f"status.{p.policy}": p.status for p in report.policies},
        },
        metrics={k: v for k, v in metrics.items() if math.isfinite(v)},
        artifacts={EVALUATION_FILE: json.dumps(report.to_dict(), indent=2)},
    )


def log_evaluation(
    store: TrackingStore,
    experiment: str,
    report: EvaluationReport,
    source: str,
    clip: float = CLIP_WEIGHT,
    min_decisions: int = MIN_DECISIONS,
) -> str:
    """Record the evaluation in `experiment` (created if new); returns the run id.

    Raises:
        TrackingError: the store cannot be used.
    """
    experiment_id = store.experiment_id(experiment, create=True)
    record = evaluation_record(report, source, clip, min_decisions)
    return record_run(store, experiment_id, record, "the evaluation")
