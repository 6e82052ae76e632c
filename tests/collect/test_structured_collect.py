"""Collect's structured modes on the real embedded model into a real MLflow store.

What a user sees: every cell says which mode it was collected under (param `structured`) and
which path its answer took (tag `generation_path`); cells of different modes have different
cell keys, so a re-run in another mode never resumes from (or mixes with) the other's cells,
while `--structured schema` keeps the keys cells had before the modes existed.
"""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from tipbench.backends import ModelSpec
from tipbench.collect import CollectConfig, collect, plan_grid
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS

GRID = {
    "models": "llamacpp:smollm2-135m",
    "prompts": "v1",
    "n_scenarios": 2,
    "n_tips": 2,
    "max_tokens": 96,
}


def cell_runs(uri: str, experiment: str) -> list[Run]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    return client.search_runs([exp.experiment_id], CELL_RUNS)


def test_schema_cells_keep_the_keys_they_had_before_modes_existed() -> None:
    suite = load_suite()
    cells = {
        mode: plan_grid(
            [(ModelSpec.parse("llamacpp:smollm2-135m"), "identity-1")],
            [suite.prompt("v1")],
            suite.select_scenarios(1),
            n_tips=2,
            temperature=0.7,
            seed=42,
            max_tokens=96,
            suite=suite.label,
            structured=mode,
        )[0]
        for mode in ("auto", "schema", "json", "off")
    }
    # computed with tipbench before `--structured` existed (commit ce7057c's cell key)
    assert cells["schema"].key == "54917feb109817bb"
    assert len({cell.key for cell in cells.values()}) == 4
    assert cells["schema"].request().json_schema is not None
    assert cells["json"].request().json_object and cells["json"].request().json_schema is None
    assert cells["auto"].request().constraint == cells["off"].request().constraint == "none"


def test_default_is_auto() -> None:
    assert CollectConfig().structured == "auto"
    with pytest.raises(ValueError, match="structured"):
        CollectConfig.model_validate({"structured": "grammar"})


@pytest.mark.slow
def test_modes_are_recorded_and_kept_apart(sqlite_uri: str, experiment: str) -> None:
    auto = collect(
        CollectConfig.model_validate({**GRID, "experiment": experiment}), tracking_uri=sqlite_uri
    )
    assert auto.exit_code == 0 and auto.succeeded == 2

    runs = cell_runs(sqlite_uri, experiment)
    assert {r.data.params["structured"] for r in runs} == {"auto"}
    paths = {r.data.tags["generation_path"] for r in runs}
    assert paths <= {"free", "free+rest", "free+schema", "schema"}
    for run in runs:
        constrained = "schema" in run.data.tags["generation_path"]
        assert run.data.metrics["candidate_count"] == 2 or constrained
    auto_keys = {r.data.tags["cell_key"] for r in runs}

    schema = collect(
        CollectConfig.model_validate({**GRID, "experiment": experiment, "structured": "schema"}),
        tracking_uri=sqlite_uri,
    )
    assert (schema.skipped, schema.succeeded) == (0, 2)  # nothing resumed from auto's cells
    assert not auto.warnings
    (warning,) = schema.warnings  # the user hears that the experiment now mixes modes
    assert "also holds cells collected with --structured auto" in warning

    runs = cell_runs(sqlite_uri, experiment)
    by_mode: dict[str, set[str]] = {}
    for run in runs:
        by_mode.setdefault(run.data.params["structured"], set()).add(run.data.tags["cell_key"])
        if run.data.params["structured"] == "schema":
            assert run.data.tags["generation_path"] == "schema"
    assert by_mode["auto"] == auto_keys
    assert len(by_mode["schema"]) == 2 and not by_mode["schema"] & auto_keys
