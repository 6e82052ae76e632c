"""An optimization in MLflow: a parent run in the training experiment, with its front per
iteration, its lineage and the chart of its best training score.

Layout of the run (kind `optimization`, reopened by its key when the optimization resumes):

- params: the start version, the models, the budget, the split, the seed;
- metrics at step = iteration: `iteration`, `best_training_score`, `evaluations`,
  `front_size`, `pool_size`, `proposals`, `skipped_proposals` (step 0: the start alone),
  `seconds_per_evaluation` (the wall clock of this process over the evaluations it spent:
  what the next optimization's estimate reads, `optimize._cost`);
- artifacts: `front/iteration-NNNN.json` (the pool and the front per training scenario),
  `lineage.json` (every proposal with its parent, reasons and scores, and every skipped
  one), `best_training_score.png`, `shortlist.json`;
- tags: `budget` (the latest: a larger budget continues an optimization, its params stay),
  `shortlist` and `heldout_experiment`.

The collections that evaluate proposals are its children (`mlflow.parentRunId`), and their
cell runs theirs: one run per evaluation, under the optimization that asked for it.
An iteration is recorded once: a resumed optimization skips the iterations its run has.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tipbench.optimize._plot import plot_progress
from tipbench.optimize._summary import IterationSummary, Program
from tipbench.tracking import TrackingStore, log_texts

KIND_OPTIMIZATION = "optimization"
#: The tag naming the optimization on the runs made for it (its collections' parent runs).
OPTIMIZATION_RUN_TAG = "tipbench.optimization"
BEST_METRIC = "best_training_score"
PLOT_FILE = "best_training_score.png"
LINEAGE_FILE = "lineage.json"
SHORTLIST_FILE = "shortlist.json"
SHORTLIST_TAG = "shortlist"
HELDOUT_TAG = "heldout_experiment"
BUDGET_TAG = "budget"
SPEED_METRIC = "seconds_per_evaluation"


class OptimizationRecord:
    """The parent run of one optimization (see the module's doc)."""

    def __init__(self, store: TrackingStore, experiment_id: str, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.experiment_id = experiment_id
        history = store.client.get_metric_history(run_id, BEST_METRIC)
        self.recorded = max((m.step for m in history), default=-1)
        spent = store.client.get_metric_history(run_id, "evaluations")
        self.spent = int(max((m.value for m in spent), default=0))  # before this process

    @classmethod
    def open(
        cls,
        store: TrackingStore,
        experiment_id: str,
        key: str,
        name: str,
        params: dict[str, str],
        budget: int,
    ) -> OptimizationRecord:
        tags = {BUDGET_TAG: str(budget)}
        run_id = store.open_parent(experiment_id, KIND_OPTIMIZATION, key, name, params, tags)
        return cls(store, experiment_id, run_id)

    def child_tags(self) -> dict[str, str]:
        """Tags of the runs made for this optimization: nested under it, naming it."""
        return {"mlflow.parentRunId": self.run_id, OPTIMIZATION_RUN_TAG: self.run_id}

    def iteration(self, summary: IterationSummary, seconds: float | None = None) -> bool:
        """Record an iteration's standing (once), with the seconds per evaluation so far if
        measured; True if it was new."""
        from mlflow.entities import Metric

        if summary.iteration <= self.recorded:
            return False
        now, step = int(time.time() * 1000), summary.iteration
        values = {
            "iteration": summary.iteration,
            BEST_METRIC: summary.best.mean,
            "evaluations": summary.evaluations,
            "front_size": len({v for versions in summary.front.values() for v in versions}),
            "pool_size": len(summary.programs),
            "proposals": summary.proposals,
            "skipped_proposals": summary.skipped,
        }
        if seconds is not None:
            values[SPEED_METRIC] = seconds
        metrics = [Metric(key, float(value), now, step) for key, value in values.items()]
        self.store.client.log_batch(self.run_id, metrics=metrics)
        front = json.dumps(summary.to_dict(), indent=2, ensure_ascii=False)
        log_texts(self.store.client, self.run_id, {f"front/iteration-{step:04d}.json": front})
        self.recorded = step
        return True

    def lineage(self, document: str) -> None:
        """Replace `lineage.json` (see `optimize._view.lineage_document`)."""
        log_texts(self.store.client, self.run_id, {LINEAGE_FILE: document})

    def finish(self, shortlist: Sequence[Program], heldout: str, title: str, start: float) -> None:
        """The chart, the shortlist and where it is judged next; the run ends FINISHED."""
        client = self.store.client
        history = client.get_metric_history(self.run_id, BEST_METRIC)
        points = [(m.step, m.value) for m in history]
        document = json.dumps([vars(p) for p in shortlist], indent=2, ensure_ascii=False)
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            chart = plot_progress(points, start, title, Path(tmp) / PLOT_FILE)
            log_texts(client, self.run_id, {SHORTLIST_FILE: document}, {PLOT_FILE: chart})
        client.set_tag(self.run_id, SHORTLIST_TAG, ",".join(p.version for p in shortlist))
        client.set_tag(self.run_id, HELDOUT_TAG, heldout)
        self.close("FINISHED")

    def close(self, status: str) -> None:
        self.store.close_parent(self.run_id, status, {})
