"""An experiment keeps the path its first collect of a model chose; a new experiment takes
what is known now. On the real embedded model and a real MLflow store.

What tipbench knows of a model can change between collects (its remembered probe answers
here are rewritten to favour the other path, as a later probe of other settings or another
home could): a later collect into the same experiment keeps the recorded path and says why,
and a collect into a new experiment takes the other one without asking the model anything.
The bundled model's path ships with tipbench (`collect/_known_paths.py`): here it is probed,
as a model tipbench knows nothing of.
"""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from tipbench.collect import CollectConfig, _known_paths, collect, plan_grid, preflight
from tipbench.collect._cache import request_key
from tipbench.collect._path_memory import MEMORY_FILE, PathMemory, ProbeAnswer
from tipbench.collect._probe import probe_cells
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS, GENERATION_PATHS_TAG, data_dir, decode_paths

MODEL = "llamacpp:smollm2-135m"
GRID = {"models": MODEL, "prompts": "v1", "n_tips": 2, "max_tokens": 96}
CELL_PATHS = {"schema": {"schema"}, "free-first": {"free", "free+rest", "free+schema"}}


@pytest.fixture(autouse=True)
def nothing_shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_known_paths, "SHIPPED", {})


def config(experiment: str, n_scenarios: int) -> CollectConfig:
    return CollectConfig.model_validate(
        {**GRID, "experiment": experiment, "n_scenarios": n_scenarios}
    )


def cell_paths(uri: str, experiment: str) -> set[str]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    return {
        r.data.tags["generation_path"] for r in client.search_runs([exp.experiment_id], CELL_RUNS)
    }


def favour_the_other_path(config: CollectConfig, path: str) -> str:
    """Remember, for every probe request of the grid, an answer that favours the path not
    taken; return that path."""
    (backend, identity), *_ = preflight(config)
    suite = load_suite()
    cells = plan_grid(
        [(backend.spec, identity)],
        [suite.prompt(v) for v in config.prompts],
        suite.select_scenarios(config.n_scenarios),
        n_tips=config.n_tips,
        temperature=config.temperature,
        seed=config.seed,
        max_tokens=config.generation_tokens,
        suite=suite.label,
    )
    # usable free answers of 1 token, constrained ones of 90; or free answers that fail
    answer = ProbeAnswer(1, True, 90) if path == "schema" else ProbeAnswer(96, False)
    memory = PathMemory(data_dir() / MEMORY_FILE)
    for item in probe_cells(cells, suite.scenarios):
        memory.put(request_key(identity, item.request(constraint="none")), answer)
    memory.close()
    return "free-first" if path == "schema" else "schema"


@pytest.mark.slow
def test_an_experiment_keeps_its_path_and_a_new_one_takes_the_new(
    sqlite_uri: str,
) -> None:
    first = collect(config("kept", 1), tracking_uri=sqlite_uri)
    assert first.exit_code == 0
    path = str(
        decode_paths(
            MlflowClient(sqlite_uri).get_run(first.parent_run_id).data.tags[GENERATION_PATHS_TAG]
        )[MODEL]["path"]
    )
    other = favour_the_other_path(config("kept", 1), path)

    more = collect(config("kept", 2), tracking_uri=sqlite_uri)  # one more scenario
    assert (more.skipped, more.succeeded) == (1, 1)
    (warning,) = [w for w in more.warnings if "keeps the" in w]
    assert f"{MODEL} keeps the {path} path" in warning and f"favours {other}" in warning
    assert "new experiment" in warning
    assert cell_paths(sqlite_uri, "kept") <= CELL_PATHS[path]
    recorded = MlflowClient(sqlite_uri).get_run(more.parent_run_id).data.tags[GENERATION_PATHS_TAG]
    assert decode_paths(recorded)[MODEL]["path"] == path
    assert "as recorded by the experiment" in more.paths[MODEL]

    fresh = collect(config("fresh", 1), tracking_uri=sqlite_uri)
    assert "remembered" in fresh.paths[MODEL] and fresh.paths[MODEL].startswith(
        "free first" if other == "free-first" else "schema"
    )
    assert cell_paths(sqlite_uri, "fresh") <= CELL_PATHS[other]
    assert not any("keeps the" in w for w in fresh.warnings)
