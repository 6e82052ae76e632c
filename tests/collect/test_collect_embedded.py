"""Collect on the real embedded model (SmolLM2-135M through llama.cpp) into real MLflow stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from support.servers import MlflowServer
from tipbench.backends import ModelSpec, RequestRecord, open_backend
from tipbench.backends._threads import THREADS_ENV
from tipbench.collect import (
    CUT_REST_MARK,
    CellOutcome,
    CollectConfig,
    CollectResult,
    collect,
    parse_answer,
    parse_tips,
    plan_grid,
    tips_schema,
)
from tipbench.collect._answer import answer_cell
from tipbench.collect._path_choice import FREE_FIRST
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS, GENERATION_PATHS_TAG, decode_paths

pytestmark = pytest.mark.slow

GRID = {
    "models": "llamacpp:smollm2-135m",
    "prompts": "v1,v3-few-shot",
    "n_scenarios": 2,
    "n_tips": 2,
    "max_tokens": 96,
}


def cell_runs(uri: str, experiment: str) -> list[Run]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    return client.search_runs([exp.experiment_id], CELL_RUNS)


def run_grid(
    uri: str, experiment: str, progress: Told | None = None, **overrides: object
) -> CollectResult:
    config = CollectConfig.model_validate({**GRID, "experiment": experiment, **overrides})
    return collect(config, tracking_uri=uri, progress=progress)


class Told:
    """A `CollectProgress` that keeps what it is told, in order: (what, about)."""

    def __init__(self) -> None:
        self.told: list[tuple[str, object]] = []

    def begin(self, total: int, done: int) -> None:
        self.told.append(("begin", done))

    def start(self, label: str) -> None:
        self.told.append(("start", label))

    def advance(self, outcome: CellOutcome) -> None:
        self.told.append(("advance", outcome.cell.name))

    def note(self, message: str) -> None:
        self.told.append(("note", message))

    def first(self, what: str) -> int:
        return [told for told, _ in self.told].index(what)

    def generating(self) -> int:
        """When generation began: the probe that chooses a model's path, else a cell."""
        probes = [i for i, (told, about) in enumerate(self.told) if told == "note" and
                  str(about).startswith("choosing the generation path")]  # fmt: skip
        return min([*probes, self.first("start")])


def test_grid_records_one_run_per_cell(
    sqlite_uri: str, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    told = Told()
    result = run_grid(sqlite_uri, experiment, told)

    assert result.exit_code == 0
    assert (result.total, result.succeeded, result.skipped) == (4, 4, 0)
    assert dict(result.model_loads) == {"llamacpp:smollm2-135m": 1}
    # the bundled model's path ships with tipbench: a first collect asks no probe
    assert result.requests == 4
    assert "shipped with tipbench" in result.paths["llamacpp:smollm2-135m"]
    assert not any(str(about).startswith("choosing") for _, about in told.told)
    assert ("note", "llamacpp:smollm2-135m runs on 1 thread (TIPBENCH_LLAMA_THREADS)") in told.told
    parent = MlflowClient(sqlite_uri).get_run(result.parent_run_id).data.tags
    recorded = decode_paths(parent[GENERATION_PATHS_TAG])["llamacpp:smollm2-135m"]
    assert (recorded["path"], recorded["source"]) == ("schema", "shipped")
    runs = cell_runs(sqlite_uri, experiment)
    assert sorted(r.info.run_name for r in runs) == [
        "llamacpp:smollm2-135m|v1|student-evening",
        "llamacpp:smollm2-135m|v1|student-morning",
        "llamacpp:smollm2-135m|v3-few-shot|student-evening",
        "llamacpp:smollm2-135m|v3-few-shot|student-morning",
    ]
    client = MlflowClient(sqlite_uri)
    for run in runs:
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == result.parent_run_id
        assert run.data.params["backend"] == "llamacpp"
        assert run.data.params["temperature"] == "0.7"
        assert run.data.params["seed"] == "42"
        assert run.data.params["n_tips"] == "2"
        tags = run.data.tags
        assert tags["judge_pending"] == "true"
        assert tags["rubric"] == "tip-v1"
        assert tags["suite"] == "tips@1.0.0"
        assert tags["llama_threads"] == "1"  # the threads it ran on
        assert len(tags["cell_key"]) == 16 and len(tags["scenario_hash"]) == 16
        metrics = run.data.metrics
        assert metrics["parse_success"] == 1.0
        assert 1 <= metrics["candidate_count"] <= 2
        assert metrics["latency_s"] > 0 and metrics["tokens_per_s"] > 0
        # every request of the cell counts: a constrained retry adds to the free answer's
        requests = len(tags["generation_path"].split("+"))
        assert metrics["completion_tokens"] <= 96 * requests
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert names == {"candidates.json", "prompt.txt", "response.txt", "rubric.md"}
        folder = Path(client.download_artifacts(run.info.run_id, ""))
        candidates = json.loads((folder / "candidates.json").read_text())
        assert candidates["scenario"]["id"] == run.data.params["scenario_id"]
        assert [c["id"] for c in candidates["candidates"]][:1] == ["c1"]
        assert all(c["text"] and c["format_ok"] in (0, 1) for c in candidates["candidates"])
        assert "Maya" in (folder / "prompt.txt").read_text()
        assert "# Rubric tip-v1" in (folder / "rubric.md").read_text()


def test_rerun_resumes_without_duplicates_or_loads(sqlite_uri: str, experiment: str) -> None:
    run_grid(sqlite_uri, experiment, n_scenarios=1)
    again = run_grid(sqlite_uri, experiment, n_scenarios=1)

    assert (again.skipped, again.succeeded, again.exit_code) == (2, 0, 0)
    assert not again.model_loads
    assert len(cell_runs(sqlite_uri, experiment)) == 2


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_a_new_experiment_is_generated_while_the_store_opens(
    store: str, request: pytest.FixtureRequest, experiment: str
) -> None:
    # MLflow takes seconds to open: a new experiment holds no cell, so generation begins
    # meanwhile (the probe that chooses the model's path, then the first cell), and the bar
    # gets its count once the store has answered. A local store is read for it, a server
    # asked over REST.
    uri = (
        request.getfixturevalue("sqlite_uri")
        if store == "sqlite"
        else request.getfixturevalue("mlflow_server").url
    )
    new = Told()
    run_grid(uri, experiment, new, n_scenarios=1)
    assert new.generating() < new.first("begin")
    assert new.told[new.first("begin")] == ("begin", 0)

    # an experiment that exists: its recorded cells decide what is generated, first
    more = Told()
    result = run_grid(uri, experiment, more)
    assert more.told[more.first("begin")] == ("begin", 2)
    assert more.first("begin") < more.first("start")
    assert (result.skipped, result.succeeded) == (2, 2)
    assert len(cell_runs(uri, experiment)) == 4


def test_identical_requests_come_from_the_cache(sqlite_uri: str, experiment: str) -> None:
    run_grid(sqlite_uri, experiment, n_scenarios=1)
    other = run_grid(sqlite_uri, experiment + "-copy", n_scenarios=1)

    assert other.succeeded == 2 and not other.model_loads
    runs = cell_runs(sqlite_uri, experiment + "-copy")
    assert [r.data.metrics["cached"] for r in runs] == [1.0, 1.0]


def test_same_seed_same_candidates(sqlite_uri: str, experiment: str) -> None:
    def texts(name: str) -> list[str]:
        client = MlflowClient(sqlite_uri)
        out = []
        for run in sorted(cell_runs(sqlite_uri, name), key=lambda r: r.info.run_name):
            folder = Path(client.download_artifacts(run.info.run_id, "response.txt"))
            out.append(folder.read_text())
        return out

    run_grid(sqlite_uri, experiment, n_scenarios=1, prompts="v1", use_cache=False)
    run_grid(sqlite_uri, experiment + "-b", n_scenarios=1, prompts="v1", use_cache=False)
    assert texts(experiment) == texts(experiment + "-b")


def test_remote_server_with_proxied_artifacts(mlflow_server: MlflowServer, experiment: str) -> None:
    result = run_grid(mlflow_server.url, experiment, n_scenarios=1, prompts="v1", diversity=True)

    assert result.exit_code == 0 and result.tracking_uri == mlflow_server.url
    (run,) = cell_runs(mlflow_server.url, experiment)
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/")
    assert 0.0 <= run.data.metrics["diversity"] <= 1.0
    client = MlflowClient(mlflow_server.url)
    folder = Path(client.download_artifacts(run.info.run_id, ""))
    assert json.loads((folder / "candidates.json").read_text())["candidates"]


def test_the_bundled_models_short_free_answer_keeps_its_tips_and_asks_the_rest() -> None:
    # SmolLM2 answers v1 on the student's evening with two bulleted tips of three
    suite = load_suite()
    (cell,) = plan_grid(
        [(ModelSpec.parse("llamacpp:smollm2-135m"), "identity")],
        [suite.prompt("v1")],
        (suite.scenario("student-evening"),),
        n_tips=3, temperature=0.7, seed=42, max_tokens=176, suite=suite.label,
    )  # fmt: skip
    records: list[RequestRecord] = []
    with open_backend(cell.model) as backend:
        answer = answer_cell(backend, cell, 1, FREE_FIRST, records)
    free, rest = (r.generation for r in records)
    assert free is not None and rest is not None
    kept = parse_tips(free.text, 3).tips
    assert len(kept) == 2 and answer.path == "free+rest"
    assert records[1].request.json_schema == tips_schema(1)  # the missing tip only
    assert records[1].request.messages == records[0].request.messages
    assert answer.parsed.tips[:2] == kept and len(answer.parsed.tips) == 3
    assert answer.parsed.tips[2] == parse_tips(rest.text, 1).tips[0]
    assert answer.generation.completion_tokens == free.completion_tokens + rest.completion_tokens


def test_the_bundled_models_answer_cut_at_its_token_limit_keeps_only_whole_tips() -> None:
    # at 32 tokens SmolLM2's list on the retiree's morning stops inside its second tip
    suite = load_suite()
    (cell,) = plan_grid(
        [(ModelSpec.parse("llamacpp:smollm2-135m"), "identity")],
        [suite.prompt("v1")],
        (suite.scenario("retiree-morning"),),
        n_tips=3, temperature=0.7, seed=42, max_tokens=32, suite=suite.label,
    )  # fmt: skip
    records: list[RequestRecord] = []
    with open_backend(cell.model) as backend:
        answer = answer_cell(backend, cell, 1, FREE_FIRST, records)
    free = records[0].generation
    assert free is not None and free.completion_tokens == 32
    fragment = parse_tips(free.text, 3).tips[-1]  # what the last line read as before
    whole = parse_tips(free.text, 3, cut=True).tips
    assert len(whole) == 1 and fragment not in whole
    assert records[1].request.json_schema == tips_schema(2)  # the fragment's tip asked too
    assert answer.path == "free+rest" and CUT_REST_MARK in answer.generation.text
    assert answer.parsed.tips[0] == whole[0] and fragment not in answer.parsed.tips
    assert parse_answer(answer.generation.text, 3) == answer.parsed  # as the cache reads it
