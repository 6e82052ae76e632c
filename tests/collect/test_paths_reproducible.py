"""The same grid gives the same candidates, whatever the machine's load: `--structured auto`
chooses each model's path by counts, once, and every cell of the model takes it.

Through `llama_cpp.server` (SmolLM2-135M), with `--n-tips 3`: at 3 tips SmolLM2's free
answers parse sometimes (14 of the 22 free answers of the default grid's cells we counted,
prompts v1, v2-mentor and v3-few-shot), which is where the old timed rule's path depended on
how long requests took. The model's path ships with tipbench (`collect/_known_paths.py`):
here it is probed, as any other model is. Collected twice from fresh homes, the second time
with two busy loops competing for the CPU, and a third time from the first home, which
remembers the probe's answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.servers import LlamaCppServer
from tipbench.collect import CollectConfig, CollectResult, _known_paths, collect
from tipbench.tracking import CELL_RUNS, GENERATION_PATHS_TAG, decode_paths

MODEL = "openai:smollm2@135M"


@contextmanager
def busy_cpu(loops: int = 2) -> Iterator[None]:
    """`loops` processes spinning on the CPU for as long as the block runs."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(loops)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def grid(server: LlamaCppServer, experiment: str) -> CollectConfig:
    return CollectConfig(
        models=[MODEL],
        prompts=["v1", "v2-mentor"],
        n_scenarios=1,
        n_tips=3,
        experiment=experiment,
        openai_base_url=f"http://127.0.0.1:{server.port}/v1",
    )


def answers(uri: str, experiment: str, folder: Path) -> dict[str, tuple[str, str, str]]:
    """Each cell's path, response text and candidates file, by run name."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    found = {}
    for run in client.search_runs([exp.experiment_id], CELL_RUNS):
        target = folder / experiment / run.info.run_id
        target.mkdir(parents=True)
        files = [
            Path(client.download_artifacts(run.info.run_id, name, str(target))).read_text()
            for name in ("response.txt", "candidates.json")
        ]
        found[run.info.run_name] = (run.data.tags["generation_path"], *files)
    return found


def recorded_path(uri: str, result: CollectResult) -> dict[str, object]:
    """The path the collection's parent run records for its one model."""
    tag = MlflowClient(uri).get_run(result.parent_run_id).data.tags[GENERATION_PATHS_TAG]
    (model,) = result.paths  # the model's spec as collect writes it (its size declared)
    return decode_paths(tag)[model]


@pytest.mark.slow
def test_the_same_grid_gives_the_same_candidates_on_a_loaded_machine(
    llama_server: LlamaCppServer,
    sqlite_uri: str,
    tmp_path: Path,
    tipbench_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_known_paths, "PRINTS", {})  # not recognised: probed
    quiet = collect(grid(llama_server, "quiet"), tracking_uri=sqlite_uri)
    monkeypatch.setenv("TIPBENCH_HOME", str(tmp_path / "another-home"))  # nothing remembered
    with busy_cpu():
        loaded = collect(grid(llama_server, "loaded"), tracking_uri=sqlite_uri)
    assert quiet.exit_code == loaded.exit_code == 0

    first, second = answers(sqlite_uri, "quiet", tmp_path), answers(sqlite_uri, "loaded", tmp_path)
    assert first == second and len(first) == 2  # byte for byte: paths, answers, candidates
    # every cell of the model took the model's one path, as its parent run records
    choice = recorded_path(sqlite_uri, quiet)
    assert choice == recorded_path(sqlite_uri, loaded) and choice["source"] == "probe"
    cell_paths = {"schema": {"schema"}, "free-first": {"free", "free+rest", "free+schema"}}
    cell_path = cell_paths[str(choice["path"])]
    assert {path for path, *_ in first.values()} <= cell_path
    assert quiet.paths == loaded.paths

    # a second collect from the first home, into a new experiment: the probe's answers are
    # remembered, so the model is asked the cells' requests only, and answers the same
    monkeypatch.setenv("TIPBENCH_HOME", str(tipbench_home))
    before = llama_server.completions()
    again = collect(grid(llama_server, "again"), tracking_uri=sqlite_uri)
    assert llama_server.completions() - before == again.requests
    assert again.requests < quiet.requests
    (path,) = again.paths.values()
    assert "remembered" in path and recorded_path(sqlite_uri, again)["path"] == choice["path"]
    assert answers(sqlite_uri, "again", tmp_path) == first
