"""The optimizations of an experiment as the admin panel shows them, read from MLflow.

Everything comes from the optimization's parent run (`optimize._record`): its params, its
metrics per iteration (the progress, while it runs too), its `lineage.json` (the versions
with their scores and diffs) and its chart; nothing of it is computed again. Once it has
finished, the held-out grid and the gate's verdict now (`optimize._heldout_view`). An
experiment that does not exist yet has no optimization: an empty list, not an error.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tipbench.optimize._heldout_view import heldout_grid
from tipbench.optimize._record import (
    BEST_METRIC,
    BUDGET_TAG,
    HELDOUT_TAG,
    KIND_OPTIMIZATION,
    LINEAGE_FILE,
    PLOT_FILE,
    SHORTLIST_TAG,
)
from tipbench.tracking import KIND_TAG, TrackingStore

#: The per-iteration metrics the panel's table shows.
ITERATION_METRICS = (BEST_METRIC, "evaluations", "pool_size", "proposals", "skipped_proposals")


@dataclass(frozen=True)
class OptimizationStatus:
    """One optimization: what it started from, with which models, and how far it is."""

    run_id: str
    name: str
    status: str  # MLflow's: RUNNING, FINISHED, KILLED, FAILED
    from_version: str
    model: str
    reflection_model: str
    budget: int
    iteration: int  # the last recorded (0: the start scored)
    evaluations: int
    best: float | None
    shortlist: tuple[str, ...]
    heldout_experiment: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def optimizations(store: TrackingStore, experiment: str) -> list[OptimizationStatus]:
    """The experiment's optimizations, newest first.

    Raises:
        TrackingError: the store or the experiment cannot be read.
    """
    experiment_id = store.find_experiment(experiment)
    if experiment_id is None:
        return []
    found = store.find(experiment_id, {KIND_TAG: KIND_OPTIMIZATION})
    return [
        _status(run.run_id, run.name, run.status, run.params, run.tags, run.metrics)
        for run in found
    ]


def optimization_detail(store: TrackingStore, experiment: str, run_id: str) -> dict[str, Any]:
    """One optimization's progress per iteration and its lineage (`lineage.json`; empty
    until the first iteration is recorded).

    Raises:
        KeyError: the experiment has no optimization with this run id.
    """
    client = store.client
    try:
        run = client.get_run(run_id)
    except Exception as exc:
        raise KeyError(run_id) from exc
    kind = run.data.tags.get(KIND_TAG)
    if kind != KIND_OPTIMIZATION or run.info.experiment_id != store.find_experiment(experiment):
        raise KeyError(run_id)
    data = run.data
    status = _status(
        run_id, run.info.run_name or "", run.info.status, data.params, data.tags, data.metrics
    )
    heldout = None
    if status.status == "FINISHED" and status.shortlist:
        scenarios = [s for s in data.params.get("heldout_scenarios", "").split(",") if s]
        prompts = [status.from_version, *status.shortlist]
        heldout = heldout_grid(store, status.heldout_experiment, prompts, scenarios)
    return {
        "optimization": status.to_dict(),
        "iterations": _iterations(store, run_id),
        "lineage": _lineage(store, run_id),
        "params": dict(data.params),
        "heldout": heldout,
    }


def optimization_chart(store: TrackingStore, run_id: str) -> bytes | None:
    """The best-training-score chart (PNG), once the optimization has finished."""
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        try:
            path = store.client.download_artifacts(run_id, PLOT_FILE, tmp)
        except Exception:  # not drawn yet (drawn when the optimization ends)
            return None
        return Path(path).read_bytes()


def _status(
    run_id: str,
    name: str,
    status: str,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    metrics: Mapping[str, float],
) -> OptimizationStatus:
    shortlist = tags.get(SHORTLIST_TAG, "")
    return OptimizationStatus(
        run_id,
        name,
        status,
        params.get("from_version", ""),
        params.get("model", ""),
        params.get("reflection_model", ""),
        int(tags.get(BUDGET_TAG) or params.get("budget", "0")),
        int(metrics.get("iteration", -1)) if "iteration" in metrics else -1,
        int(metrics.get("evaluations", 0)),
        metrics.get(BEST_METRIC),
        tuple(v for v in shortlist.split(",") if v),
        tags.get(HELDOUT_TAG, ""),
    )


def _iterations(store: TrackingStore, run_id: str) -> list[dict[str, float]]:
    """Per iteration, the metrics recorded at its step."""
    rows: dict[int, dict[str, float]] = {}
    for key in ITERATION_METRICS:
        for metric in store.client.get_metric_history(run_id, key):
            rows.setdefault(metric.step, {"iteration": metric.step})[key] = metric.value
    return [rows[step] for step in sorted(rows)]


def _lineage(store: TrackingStore, run_id: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        try:
            path = store.client.download_artifacts(run_id, LINEAGE_FILE, tmp)
        except Exception:  # nothing recorded yet
            return {"rows": [], "skipped": []}
        document: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
        return document
