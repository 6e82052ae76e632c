"""Collect on Ollama: the grid into a real MLflow SQLite store, one model resident at a time.

Real Ollama cannot be installed here, so the grid runs against `support.ollama_server`, a
protocol server that follows Ollama's documented native API and is itself checked with the
official `ollama` client (`tests/support/test_ollama_server.py`). It records every load,
unload and chat request, which models are resident, and can inject faults.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import Run

from support.ollama_server import FakeOllama, ModelEntry
from support.servers import free_port
from tipbench import BackendUnavailable, ModelNotFound, ModelTooLarge
from tipbench.backends import RetryPolicy
from tipbench.collect import (
    CUT_REST_MARK,
    REST_MARK,
    CellOutcome,
    CollectConfig,
    CollectResult,
    collect,
)
from tipbench.suite import load_suite
from tipbench.tracking import CANDIDATES_FILE, RESPONSE_FILE

QWEN, GEMMA, LLAMA_8B = "qwen2.5:0.5b", "gemma3:1b", "llama3.1:8b"
MODELS = {
    QWEN: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M", family="qwen2"),
    GEMMA: ModelEntry(parameter_count=999_885_952, parameter_size="999.89M", family="gemma3"),
    LLAMA_8B: ModelEntry(parameter_count=8_030_261_248, parameter_size="8.0B"),
}
GRID = [f"ollama:{QWEN}", f"ollama:{GEMMA}"]
PROMPTS = ["v1", "v2-mentor"]
SCENARIOS = [s.id for s in load_suite().select_scenarios(2)]
FAST_RETRY = RetryPolicy(attempts=3, backoff_s=0.01)


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(MODELS) as fake:
        yield fake


def grid_config(server: FakeOllama | str, **overrides: object) -> CollectConfig:
    url = server if isinstance(server, str) else server.url
    values: dict[str, object] = {
        "models": GRID,
        "ollama_url": url,
        "n_scenarios": 2,
        "prompts": PROMPTS,
        "n_tips": 3,
    }
    return CollectConfig(**(values | overrides))  # type: ignore[arg-type]


def cell_name(model: str, prompt: str, scenario: str) -> str:
    return f"ollama:{model}|{prompt}|{scenario}"


@dataclass
class Store:
    """What a user finds in the MLflow store after a collection."""

    uri: str
    client: mlflow.MlflowClient
    experiment_id: str

    @classmethod
    def open(cls, uri: str, experiment: str = "tip-bench-auto") -> Store:
        client = mlflow.MlflowClient(uri)
        found = client.get_experiment_by_name(experiment)
        assert found is not None, f"no experiment {experiment}"
        return cls(uri, client, found.experiment_id)

    def runs(self, kind: str) -> list[Run]:
        return list(
            self.client.search_runs([self.experiment_id], f"tags.`tipbench.kind` = '{kind}'")
        )

    def cells(self) -> dict[str, Run]:
        runs = self.runs("cell")
        by_name = {run.info.run_name: run for run in runs}
        assert len(by_name) == len(runs), "a cell is recorded twice"
        return by_name

    def parent(self) -> Run:
        (parent,) = self.runs("collection")
        return parent

    def artifact(self, run: Run, name: str) -> str:
        path = mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path=name, tracking_uri=self.uri
        )
        return Path(path).read_text(encoding="utf-8")


# -- the healthy grid (collected once, then inspected by several tests) ---------------------


@dataclass
class Collected:
    server: FakeOllama
    result: CollectResult
    store: Store


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collected]:
    folder = tmp_path_factory.mktemp("ollama-grid")
    with FakeOllama(MODELS) as fake, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIPBENCH_HOME", str(folder / "home"))
        uri = f"sqlite:///{folder / 'mlflow.db'}"
        result = collect(grid_config(fake), tracking_uri=uri)
        yield Collected(fake, result, Store.open(uri))


def test_every_cell_succeeds(collected: Collected) -> None:
    result = collected.result
    assert (result.total, result.succeeded, result.skipped) == (8, 8, 0)
    assert result.failed == [] and result.unwritten == []
    assert result.exit_code == 0


def test_each_model_is_loaded_once_and_never_two_at_a_time(collected: Collected) -> None:
    server = collected.server
    assert server.loads == {QWEN: 1, GEMMA: 1}
    assert collected.result.model_loads == {f"ollama:{QWEN}": 1, f"ollama:{GEMMA}": 1}
    assert server.max_resident == 1
    assert server.resident == set()
    for model in (QWEN, GEMMA):
        assert [kind for kind, m in server.events if m == model][-1] == "unload"


def test_cells_run_model_major(collected: Collected) -> None:
    # per model, within its one load: its probe (three cells' free answers and the
    # constrained answer that weighs them), then the one cell it did not ask
    events = collected.server.events
    assert events == (
        [("load", QWEN)] + [("chat", QWEN)] * (4 + 1) + [("unload", QWEN)]
        + [("load", GEMMA)] + [("chat", GEMMA)] * (4 + 1) + [("unload", GEMMA)]
    )  # fmt: skip


def test_one_run_per_cell_under_the_parent_run(collected: Collected) -> None:
    store = collected.store
    parent = store.parent()
    assert parent.info.run_id == collected.result.parent_run_id
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["cells_ok"] == 8

    cells = store.cells()
    assert set(cells) == {
        cell_name(m, p, s) for m in (QWEN, GEMMA) for p in PROMPTS for s in SCENARIOS
    }
    for run in cells.values():
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id


def test_cell_runs_hold_the_params_tags_and_metrics_of_the_spec(collected: Collected) -> None:
    suite = load_suite()
    cells = collected.store.cells()
    run = cells[cell_name(GEMMA, "v2-mentor", SCENARIOS[1])]
    assert run.data.params | {"max_tokens": "?"} == {
        "model": f"ollama:{GEMMA}",
        "backend": "ollama",
        "prompt_version": "v2-mentor",
        "scenario_id": SCENARIOS[1],
        "temperature": "0.7",
        "n_tips": "3",
        "seed": "42",
        "max_tokens": "?",
        "structured": "auto",
    }
    tags = run.data.tags
    assert tags["generation_path"] == "free"  # the free answer parsed: no constrained retry
    assert tags["judge_pending"] == "true"
    assert tags["rubric"] == "tip-v1"
    assert tags["cell_status"] == "ok"
    assert tags["scenario_hash"] == suite.scenario(SCENARIOS[1]).content_hash
    assert tags["suite"] == suite.label == "tips@1.0.0"
    metrics = run.data.metrics
    assert metrics["parse_success"] == 1.0
    assert metrics["candidate_count"] == 3
    assert metrics["attempts"] == 1
    assert metrics["latency_s"] > 0 and metrics["completion_tokens"] > 0
    assert metrics["tokens_per_s"] > 0

    keys = [r.data.tags["cell_key"] for r in cells.values()]
    assert len(set(keys)) == len(keys) == 8


def test_temperature_and_seed_reach_the_server(collected: Collected) -> None:
    generations = [r for r in collected.server.requests if r["messages"]]
    assert all(sent["options"]["temperature"] == 0.7 for sent in generations)
    assert all(sent["options"]["seed"] == 42 for sent in generations)
    # --structured auto: each model's probe asked three of its four cells freely, found
    # answers that pay and weighed them by one constrained answer; the cells kept the
    # probe's answers, so no cell was asked twice
    free = [(s["model"], str(s["messages"])) for s in generations if s.get("format") is None]
    assert len(free) == len(set(free)) == 8 and len(generations) == 8 + 2


def test_cell_artifacts_are_real_artifacts(collected: Collected) -> None:
    store = collected.store
    run = store.cells()[cell_name(QWEN, "v1", SCENARIOS[0])]
    names = {a.path for a in store.client.list_artifacts(run.info.run_id)}
    assert {"prompt.txt", CANDIDATES_FILE, "response.txt", "rubric.md"} <= names

    candidates = json.loads(store.artifact(run, CANDIDATES_FILE))
    assert candidates["cell_key"] == run.data.tags["cell_key"]
    texts = [c["text"] for c in candidates["candidates"]]
    assert len(texts) == 3 and all(texts)
    assert [c["id"] for c in candidates["candidates"]] == ["c1", "c2", "c3"]
    response = store.artifact(run, "response.txt")
    assert response.splitlines() == [f"{i}. {text}" for i, text in enumerate(texts, 1)]

    persona = load_suite().scenario(SCENARIOS[0]).persona_name
    assert persona in store.artifact(run, "prompt.txt")
    assert "tip-v1" in store.artifact(run, "rubric.md")


# -- faults -------------------------------------------------------------------------------


# The faults below hit the next requests: the cells' own under `--structured schema`, which
# asks no probe first (faults met by the probe: `test_a_probe_request_that_fails_is_retried`).


def test_transient_server_errors_are_retried(server: FakeOllama, sqlite_uri: str) -> None:
    server.fail_next(500)  # out of memory
    server.fail_next(503)  # queue full
    config = grid_config(server, prompts=["v1"], structured="schema")
    result = collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY)
    assert result.exit_code == 0 and result.succeeded == 4

    cells = Store.open(sqlite_uri).cells()
    first = cells[cell_name(QWEN, "v1", SCENARIOS[0])]
    assert first.info.status == "FINISHED"
    assert first.data.metrics["attempts"] == 3
    others = [r for name, r in cells.items() if r is not first]
    assert [r.data.metrics["attempts"] for r in others] == [1, 1, 1]
    assert server.loads == {QWEN: 1, GEMMA: 1}  # retries do not reload the model


def test_a_cell_that_keeps_failing_is_recorded_failed_and_the_grid_goes_on(
    server: FakeOllama, sqlite_uri: str
) -> None:
    server.fail_next(503, count=2)
    retry = RetryPolicy(attempts=2, backoff_s=0.01)
    config = grid_config(server, prompts=["v1"], structured="schema")
    result = collect(config, tracking_uri=sqlite_uri, retry=retry)

    failed_name = cell_name(QWEN, "v1", SCENARIOS[0])
    assert result.exit_code == 1
    assert [name for name, _ in result.failed] == [failed_name]
    assert result.succeeded == 3

    store = Store.open(sqlite_uri)
    cells = store.cells()
    failed = cells[failed_name]
    assert failed.info.status == "FAILED"
    assert failed.data.tags["cell_status"] == "failed"
    assert "HTTP 503" in failed.data.tags["error"]
    assert "server busy" in failed.data.tags["error"]
    assert failed.data.tags["judge_pending"] == "false"
    assert failed.data.metrics["parse_success"] == 0
    artifacts = {a.path for a in store.client.list_artifacts(failed.info.run_id)}
    assert CANDIDATES_FILE not in artifacts  # nothing to judge
    assert all(r.info.status == "FINISHED" for n, r in cells.items() if n != failed_name)
    assert store.parent().info.status == "FAILED"
    assert server.resident == set() and server.max_resident == 1

    # the re-run generates the failed cell only and replaces its run
    chats_before = len([e for e in server.events if e[0] == "chat"])
    again = collect(config, tracking_uri=sqlite_uri, retry=retry)
    assert again.exit_code == 0
    assert (again.skipped, again.succeeded) == (3, 1)
    assert [e for e in server.events if e[0] == "chat"][chats_before:] == [("chat", QWEN)]
    assert server.loads == {QWEN: 2, GEMMA: 1}  # the model without pending cells stays out

    cells_after = store.cells()
    assert set(cells_after) == set(cells)  # exactly one run per cell
    assert all(r.info.status == "FINISHED" for r in cells_after.values())
    assert cells_after[failed_name].info.run_id != failed.info.run_id
    assert store.parent().info.status == "FINISHED"  # the same parent, reopened


def test_a_failed_cell_records_how_often_it_was_tried(server: FakeOllama, sqlite_uri: str) -> None:
    server.fail_next(503, count=2)
    config = grid_config(
        server, models=GRID[:1], prompts=["v1"], n_scenarios=1, structured="schema"
    )
    result = collect(config, tracking_uri=sqlite_uri, retry=RetryPolicy(attempts=2, backoff_s=0.01))
    assert result.exit_code == 1
    (run,) = Store.open(sqlite_uri).cells().values()
    assert run.data.metrics["attempts"] == 2


def test_garbage_output_is_retried_with_the_next_seed(server: FakeOllama, sqlite_uri: str) -> None:
    server.garbage_next()
    result = collect(
        grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=1, structured="schema"),
        tracking_uri=sqlite_uri,
        retry=FAST_RETRY,
    )
    assert result.exit_code == 0
    (run,) = Store.open(sqlite_uri).cells().values()
    assert run.data.metrics["attempts"] == 2
    assert run.data.tags["parse_method"] == "json"
    assert run.data.tags["generation_path"] == "schema"
    assert [r["options"]["seed"] for r in server.requests if r["messages"]] == [42, 43]
    candidates = json.loads(Store.open(sqlite_uri).artifact(run, CANDIDATES_FILE))
    assert len(candidates["candidates"]) == 3


def test_a_garbage_free_answer_is_asked_again_with_the_schema(
    server: FakeOllama, sqlite_uri: str
) -> None:
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=1, use_cache=False)
    # a first collect probes the model (its free answers pay) and remembers it
    learning = config.model_copy(update={"experiment": "tip-bench-learning"})
    assert collect(learning, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    before = len(server.requests)
    server.garbage_next()
    result = collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY)
    assert result.exit_code == 0
    run = Store.open(sqlite_uri).cells()[cell_name(QWEN, "v1", SCENARIOS[0])]
    assert run.data.metrics["attempts"] == 1
    assert run.data.tags["generation_path"] == "free+schema"
    assert run.data.tags["parse_method"] == "json"
    sent = [r for r in server.requests[before:] if r["messages"]]
    assert [r["options"]["seed"] for r in sent] == [42, 42]  # the same request, constrained
    assert sent[0].get("format") is None
    assert sent[1]["format"]["properties"]["tips"]["minItems"] == 3


def test_a_free_answer_short_of_tips_keeps_them_and_asks_only_the_rest(
    server: FakeOllama, sqlite_uri: str
) -> None:
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=1)
    learning = config.model_copy(update={"experiment": "tip-bench-learning", "use_cache": False})
    assert collect(learning, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    before = len(server.requests)
    free = "1. Put the phone in another room.\n2. Start with the hardest task first.\n"
    server.script(QWEN, [free])  # two of the three tips, then the fake's own answer
    assert collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    store = Store.open(sqlite_uri)
    run = store.cells()[cell_name(QWEN, "v1", SCENARIOS[0])]
    assert run.data.tags["generation_path"] == "free+rest"
    sent = [r for r in server.requests[before:] if r["messages"]]
    assert [r["options"]["seed"] for r in sent] == [42, 42]
    assert sent[1]["messages"] == sent[0]["messages"]  # the same messages: a cached prompt
    assert sent[1]["format"]["properties"]["tips"]["minItems"] == 1  # only the missing tip
    tips = json.loads(store.artifact(run, CANDIDATES_FILE))["candidates"]
    assert [t["text"] for t in tips][:2] == [
        "Put the phone in another room.",
        "Start with the hardest task first.",
    ]
    assert len(tips) == 3
    response = store.artifact(run, RESPONSE_FILE)
    assert response.startswith(free) and REST_MARK in response  # both answers, marked

    # the cache replays the cell from its text: the same three tips, no request
    again = config.model_copy(update={"experiment": "tip-bench-again"})
    asked = len(server.requests)
    assert collect(again, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    assert len(server.requests) == asked
    replayed = Store.open(sqlite_uri, "tip-bench-again").cells()[run.info.run_name]
    assert json.loads(store.artifact(replayed, CANDIDATES_FILE))["candidates"] == tips


def test_a_probe_request_that_fails_is_retried(server: FakeOllama, sqlite_uri: str) -> None:
    server.fail_next(503)  # the probe's first request
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=1)
    result = collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY)
    assert result.exit_code == 0
    assert result.paths[f"ollama:{QWEN}"].startswith("free first")  # as without the fault
    # the failed one and the probe's four; the cell took the probe's answer to its request
    assert result.requests == 1 + 4


def paths(sqlite_uri: str) -> list[str]:
    """Each cell's generation path, in the order the cells ran (prompt, then scenario)."""
    cells = sorted(Store.open(sqlite_uri).cells().values(), key=lambda run: run.info.start_time)
    return [run.data.tags["generation_path"] for run in cells]


def test_auto_asks_with_the_schema_when_the_probes_free_answers_do_not_parse(
    server: FakeOllama, sqlite_uri: str
) -> None:
    server.free_garbage = True  # free answers never parse; schema-constrained ones do
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=0)
    result = collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY)
    assert result.exit_code == 0
    # the probe's three free answers failed: every cell is asked with the schema at once
    assert paths(sqlite_uri) == ["schema"] * 8
    free = [r for r in server.requests if r["messages"] and not r.get("format")]
    assert [r["options"]["seed"] for r in free] == [42, 42, 42]  # three cells' requests
    # the free answers wasted, every cell's constrained one (the first cell's asked by the
    # probe, to weigh usable answers had there been any)
    assert result.requests == 3 + 8
    assert result.paths[f"ollama:{QWEN}"].startswith("schema (probe, 4 requests now: 0 of 3")


def test_auto_stays_free_while_free_answers_parse(server: FakeOllama, sqlite_uri: str) -> None:
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=0)
    result = collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY)
    assert result.exit_code == 0
    assert paths(sqlite_uri) == ["free"] * 8
    # the probe weighed its usable free answers by one constrained answer; no cell needed
    # one, and the three cells it asked kept its free answers
    constrained = [r["options"]["seed"] for r in server.requests if r.get("format")]
    assert constrained == [42]
    assert result.requests == 3 + 1 + 5
    # a cell that kept the probe's answer records it as its own: one request, timed
    for run in Store.open(sqlite_uri).cells().values():
        assert run.data.metrics["attempts"] == 1 and run.data.metrics["latency_s"] > 0


def test_a_model_over_the_size_limit_is_refused_before_any_chat(
    server: FakeOllama, sqlite_uri: str
) -> None:
    config = grid_config(server, models=[*GRID, f"ollama:{LLAMA_8B}"])
    with pytest.raises(ModelTooLarge, match=r"ollama:llama3\.1:8b has 8\.03B .* limit of 4B"):
        collect(config, tracking_uri=sqlite_uri)
    assert server.requests == []  # not even the small models were loaded
    assert mlflow.MlflowClient(sqlite_uri).get_experiment_by_name("tip-bench-auto") is None


def test_an_unknown_model_is_refused_before_any_chat(server: FakeOllama, sqlite_uri: str) -> None:
    config = grid_config(server, models=[*GRID, "ollama:qwen2.5:72b"])
    with pytest.raises(ModelNotFound, match=r"ollama:qwen2\.5:72b"):
        collect(config, tracking_uri=sqlite_uri)
    assert server.requests == []


def test_an_unreachable_ollama_is_reported(sqlite_uri: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable, match=f"cannot reach Ollama at {url}"):
        collect(grid_config(url), tracking_uri=sqlite_uri)


def test_concurrent_requests_keep_one_model_resident(server: FakeOllama, sqlite_uri: str) -> None:
    result = collect(grid_config(server, concurrency=4), tracking_uri=sqlite_uri)
    assert result.exit_code == 0 and result.succeeded == 8
    assert server.loads == {QWEN: 1, GEMMA: 1}
    assert server.max_resident == 1 and server.resident == set()
    assert len(Store.open(sqlite_uri).cells()) == 8


class InterruptAfter:
    """A progress receiver whose `advance` raises KeyboardInterrupt, as Ctrl-C would."""

    def __init__(self, cells: int) -> None:
        self.cells = cells
        self.seen: list[str] = []

    def begin(self, total: int, done: int) -> None:
        pass

    def start(self, label: str) -> None:
        pass

    def advance(self, outcome: CellOutcome) -> None:
        self.seen.append(outcome.cell.name)
        if len(self.seen) == self.cells:
            raise KeyboardInterrupt

    def note(self, message: str) -> None:
        pass


def test_ctrl_c_unloads_the_model_and_kills_the_parent_run(
    server: FakeOllama, sqlite_uri: str
) -> None:
    progress = InterruptAfter(cells=2)
    with pytest.raises(KeyboardInterrupt):
        collect(grid_config(server), tracking_uri=sqlite_uri, progress=progress)

    assert server.events[-1] == ("unload", QWEN)
    assert server.resident == set()
    assert GEMMA not in server.loads  # the grid stopped in the first model's block
    store = Store.open(sqlite_uri)
    assert store.parent().info.status == "KILLED"
    cells = store.cells()  # what finished before Ctrl-C is kept
    assert set(progress.seen) <= set(cells)
    assert all(r.info.status == "FINISHED" for r in cells.values())


class CtrlCDuringLoad(FakeOllama):
    """Presses Ctrl-C (SIGINT to this process) while the client waits for a model to load."""

    def _load(self, model: str, keep_alive: object) -> None:
        first = model not in self.resident
        super()._load(model, keep_alive)
        if first:
            os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_while_the_model_loads_still_unloads_it(sqlite_uri: str) -> None:
    with CtrlCDuringLoad(MODELS) as server:
        with pytest.raises(KeyboardInterrupt):
            collect(grid_config(server), tracking_uri=sqlite_uri)
        assert server.loads == {QWEN: 1}
        assert server.resident == set()


class Recorder:
    """A progress receiver that records what it is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def begin(self, total: int, done: int) -> None:
        self.events.append(("begin", f"{done}/{total}"))

    def start(self, label: str) -> None:
        self.events.append(("start", label))

    def advance(self, outcome: CellOutcome) -> None:
        self.events.append(("done", outcome.cell.name))

    def note(self, message: str) -> None:
        self.events.append(("note", message))


def test_progress_names_each_cell_while_it_is_generated(
    server: FakeOllama, sqlite_uri: str
) -> None:
    recorder = Recorder()
    result = collect(grid_config(server), tracking_uri=sqlite_uri, progress=recorder)
    assert result.exit_code == 0
    steps = [event for event in recorder.events if event[0] in ("start", "done")]
    assert len(steps) == 2 * result.total
    for started, done in zip(steps[::2], steps[1::2], strict=True):
        assert started[0] == "start" and done == ("done", started[1])  # one at a time
    loads = [i for i, e in enumerate(recorder.events) if e[1].startswith("loading ")]
    first_start = next(i for i, e in enumerate(recorder.events) if e[0] == "start")
    assert loads and loads[0] < first_start  # the bar says "loading" only before generating


def test_a_free_answer_cut_off_at_its_token_limit_keeps_only_its_whole_tips(
    server: FakeOllama, sqlite_uri: str
) -> None:
    whole = "1. Put the phone in another room.\n2. Start with the hardest task first.\n"
    third = (
        "3. Plan the week on Monday morning, then book the dentist, call the school about the"
        " trip, pay the gas bill, water the plants on the balcony, answer the landlord, return"
        " the library books, buy a card for Anna, sort the receipts from March and April,"
        " check the train times for Friday and ask Tom whether he still needs the"
    )
    free = whole + third  # 71 words (the fake's tokens) at a limit of 64: cut off
    config = grid_config(server, models=GRID[:1], prompts=["v1"], n_scenarios=1, max_tokens=64)
    learning = config.model_copy(update={"experiment": "tip-bench-learning", "use_cache": False})
    assert collect(learning, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    before = len(server.requests)
    server.script(QWEN, [free])
    assert collect(config, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    store = Store.open(sqlite_uri)
    run = store.cells()[cell_name(QWEN, "v1", SCENARIOS[0])]
    assert run.data.tags["generation_path"] == "free+rest"
    (rest,) = [r for r in server.requests[before:] if r.get("format")]
    assert rest["format"]["properties"]["tips"]["minItems"] == 1  # the unfinished third
    tips = [t["text"] for t in json.loads(store.artifact(run, CANDIDATES_FILE))["candidates"]]
    assert tips[:2] == ["Put the phone in another room.", "Start with the hardest task first."]
    assert len(tips) == 3 and not any(tip.startswith("Plan the week") for tip in tips)
    response = store.artifact(run, RESPONSE_FILE)
    assert response.startswith(free) and CUT_REST_MARK in response  # what the model wrote

    # the cache replays it as it was counted
    again = config.model_copy(update={"experiment": "tip-bench-again"})
    asked = len(server.requests)
    assert collect(again, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    assert len(server.requests) == asked
    replayed = Store.open(sqlite_uri, "tip-bench-again").cells()[run.info.run_name]
    texts = json.loads(store.artifact(replayed, CANDIDATES_FILE))["candidates"]
    assert [t["text"] for t in texts] == tips
