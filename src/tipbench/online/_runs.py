"""The cell runs a log's provenance names, checked against the tracking store: a tip said to
come from a run the store does not have (or from another experiment, model or prompt than the
run's) is a bad log, refused in one line before anything is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tipbench.online._sources import SourceRun
from tipbench.tracking import CellParam, TrackingStore

if TYPE_CHECKING:
    from mlflow.entities import Run


class TrackedRuns:
    """`RunCheck` over a tracking store (each run read once)."""

    def __init__(self, store: TrackingStore) -> None:
        self.store = store
        self._runs: dict[str, Run | None] = {}
        self._experiments: dict[str, str | None] = {}

    def _run(self, run_id: str) -> Run | None:
        if run_id not in self._runs:
            try:
                self._runs[run_id] = self.store.client.get_run(run_id)
            except Exception:  # MLflow's "not found" (and an id it cannot read)
                self._runs[run_id] = None
        return self._runs[run_id]

    def _experiment(self, name: str) -> str | None:
        if name not in self._experiments:
            self._experiments[name] = self.store.find_experiment(name)
        return self._experiments[name]

    def __call__(self, run: SourceRun) -> str | None:
        found = self._run(run.run_id)
        if found is None:
            return "the tracking store has no such run"
        if run.experiment is not None:
            experiment = self._experiment(run.experiment)
            if experiment is None or experiment != found.info.experiment_id:
                return f"it is not a run of experiment {run.experiment!r}"
        params = found.data.params
        for field, name in (
            (run.model, CellParam.MODEL),
            (run.prompt_version, CellParam.PROMPT_VERSION),
        ):
            if field is not None and params.get(name) != field:
                return f"the run's {name} is {params.get(name)!r}, not {field!r}"
        return None
