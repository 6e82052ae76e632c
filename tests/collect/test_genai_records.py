"""Collect's GenAI records, read back through MLflow's own client: a trace per generated cell,
the rules' flags as assessments, the suite's prompts in the Prompt Registry.

The grid runs against `support.ollama_server` (see `test_collect_ollama.py`), which can
inject the faults and retries whose requests the traces must show.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.request import urlopen

import mlflow
import pytest
from mlflow.entities import Trace

from support.cli import tipbench
from support.ollama_server import FakeOllama, ModelEntry
from support.servers import MlflowServer, ServerProcess
from tipbench.backends import RetryPolicy
from tipbench.collect import CollectConfig, collect
from tipbench.promote import promote_prompt, registry_template
from tipbench.suite import load_suite
from tipbench.tracking import CANDIDATES_FILE, CELL_RUNS

QWEN = "qwen2.5:0.5b"
MODELS = {QWEN: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M")}
FAST_RETRY = RetryPolicy(attempts=3, backoff_s=0.01)


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(MODELS) as fake:
        yield fake


def config(server: FakeOllama, **overrides: object) -> CollectConfig:
    values: dict[str, object] = {
        "models": [f"ollama:{QWEN}"],
        "ollama_url": server.url,
        "n_scenarios": 2,
        "prompts": ["v1", "v2-mentor"],
        "n_tips": 3,
    }
    return CollectConfig(**(values | overrides))  # type: ignore[arg-type]


class Found:
    """What MLflow's client finds in the experiment."""

    def __init__(self, uri: str, experiment: str = "tip-bench-auto") -> None:
        self.client = mlflow.MlflowClient(uri)
        found = self.client.get_experiment_by_name(experiment)
        assert found is not None
        self.experiment = found
        self.experiment_id = found.experiment_id

    def runs(self) -> dict[str, mlflow.entities.Run]:
        runs = self.client.search_runs([self.experiment_id], CELL_RUNS)
        return {run.info.run_name: run for run in runs}

    def traces(self, filter_string: str | None = None) -> list[Trace]:
        return list(
            self.client.search_traces(locations=[self.experiment_id], filter_string=filter_string)
        )

    def candidates(self, run: mlflow.entities.Run) -> list[dict[str, object]]:
        path = mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id,
            artifact_path=CANDIDATES_FILE,
            tracking_uri=self.client._tracking_client.tracking_uri,
        )
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
        return list(document["candidates"])


def test_each_cell_is_a_trace_linked_to_its_run(server: FakeOllama, sqlite_uri: str) -> None:
    assert collect(config(server), tracking_uri=sqlite_uri).exit_code == 0
    found = Found(sqlite_uri)
    runs = found.runs()
    traces = found.traces()
    assert len(runs) == len(traces) == 4
    for trace in traces:
        run = runs[trace.info.tags["mlflow.traceName"]]
        run_id = run.info.run_id
        assert run.data.tags["trace_id"] == trace.info.trace_id
        assert trace.info.trace_metadata["mlflow.sourceRun"] == run_id
        tags = trace.info.tags
        assert tags["run_id"] == run_id
        assert tags["cell_key"] == run.data.tags["cell_key"]
        assert (tags["model"], tags["prompt_version"], tags["scenario_id"]) == (
            run.data.params["model"],
            run.data.params["prompt_version"],
            run.data.params["scenario_id"],
        )
        root = trace.data.spans[0]
        assert root.parent_id is None and root.name == run.info.run_name
        assert root.inputs["scenario"]["id"] == run.data.params["scenario_id"]
        assert [m["role"] for m in root.inputs["messages"]] == ["system", "user"]
        candidates = found.candidates(run)
        assert [c["text"] for c in root.outputs["candidates"]] == [c["text"] for c in candidates]
        (request,) = [s for s in trace.data.spans if s.name.startswith("request")]
        assert request.name == "request 1: free"
        assert request.get_attribute("mlflow.llm.model") == f"ollama:{QWEN}"
        usage = request.get_attribute("mlflow.chat.tokenUsage")
        assert usage["output_tokens"] == run.data.metrics["completion_tokens"]
        assert usage["input_tokens"] == run.data.metrics["prompt_tokens"]
        assert request.get_attribute("latency_s") > 0
        assert request.outputs["choices"][0]["message"]["role"] == "assistant"
        assert root.get_attribute("generation_path") == "free"
        assert trace.info.token_usage["output_tokens"] == usage["output_tokens"]
        by_run = found.client.search_traces(locations=[found.experiment_id], run_id=run_id)
        assert [t.info.trace_id for t in by_run] == [trace.info.trace_id]
    assert found.experiment.tags["mlflow.experimentKind"] == "genai_development"


def test_traces_are_searchable_by_model_prompt_and_scenario(
    server: FakeOllama, sqlite_uri: str
) -> None:
    collect(config(server), tracking_uri=sqlite_uri)
    found = Found(sqlite_uri)
    scenario = load_suite().select_scenarios(1)[0].id
    assert len(found.traces(f"tags.model = 'ollama:{QWEN}'")) == 4
    assert len(found.traces("tags.prompt_version = 'v2-mentor'")) == 2
    hits = found.traces(f"tags.prompt_version = 'v1' AND tags.scenario_id = '{scenario}'")
    assert [t.info.tags["mlflow.traceName"] for t in hits] == [f"ollama:{QWEN}|v1|{scenario}"]


def test_a_free_answer_asked_again_with_the_schema_shows_both_requests(
    server: FakeOllama, sqlite_uri: str
) -> None:
    cfg = config(server, prompts=["v1"], n_scenarios=1, use_cache=False)
    # a first collect probes the model (its free answers pay) and remembers it
    collect(cfg.model_copy(update={"experiment": "tip-bench-learning"}), tracking_uri=sqlite_uri)
    server.garbage_next()
    collect(cfg, tracking_uri=sqlite_uri)
    (trace,) = Found(sqlite_uri).traces()
    requests = [s for s in trace.data.spans if s.name.startswith("request")]
    assert [s.name for s in requests] == ["request 1: free", "request 2: schema"]
    assert [s.get_attribute("constraint") for s in requests] == ["free", "schema"]
    assert trace.data.spans[0].get_attribute("generation_path") == "free+schema"


def test_a_failed_request_is_a_failed_span_and_a_failed_cell_a_failed_trace(
    server: FakeOllama, sqlite_uri: str
) -> None:
    server.fail_next(503, count=2)  # the cell's requests: --structured schema asks no probe
    retry = RetryPolicy(attempts=2, backoff_s=0.01)
    cfg = config(server, prompts=["v1"], n_scenarios=1, structured="schema")
    assert collect(cfg, tracking_uri=sqlite_uri, retry=retry).exit_code == 1
    (trace,) = Found(sqlite_uri).traces()
    assert trace.info.state.value == "ERROR"
    requests = [s for s in trace.data.spans if s.name.startswith("request")]
    assert [s.status.status_code.value for s in requests] == ["ERROR", "ERROR"]
    assert all(s.status.description for s in requests)  # the error

    # the re-run generates the cell again: its trace replaces the failed one
    assert collect(cfg, tracking_uri=sqlite_uri, retry=retry).exit_code == 0
    found = Found(sqlite_uri)
    (trace,) = found.traces()
    assert trace.info.state.value == "OK"
    (run,) = found.runs().values()
    assert run.data.tags["trace_id"] == trace.info.trace_id
    # ... and its run replaces the failed one among the prompt version's runs
    (version,) = found.client.search_prompt_versions("tipbench-tips")
    assert version.tags["mlflow.prompt.run_ids"] == run.info.run_id


def test_a_transient_failure_then_an_answer_shows_both_requests(
    server: FakeOllama, sqlite_uri: str
) -> None:
    server.fail_next(503)  # the cell's first request: --structured schema asks no probe
    cfg = config(server, prompts=["v1"], n_scenarios=1, structured="schema")
    assert collect(cfg, tracking_uri=sqlite_uri, retry=FAST_RETRY).exit_code == 0
    (trace,) = Found(sqlite_uri).traces()
    requests = [s for s in trace.data.spans if s.name.startswith("request")]
    assert [s.status.status_code.value for s in requests] == ["ERROR", "OK"]
    assert [s.get_attribute("seed") for s in requests] == [42, 43]  # a retry moves the seed on


def test_the_rules_flags_are_code_assessments_on_each_candidate(
    server: FakeOllama, sqlite_uri: str
) -> None:
    collect(config(server, prompts=["v1"], n_scenarios=1), tracking_uri=sqlite_uri)
    found = Found(sqlite_uri)
    (trace,) = found.traces()
    (run,) = found.runs().values()
    spans = {s.span_id: s.name for s in trace.data.spans}
    given = {
        (spans[a.span_id], a.name): a.value
        for a in trace.info.assessments
        if a.source.source_type == "CODE" and a.source.source_id == "rules:tip-v1"
    }
    flags = ("format_ok", "overlong")
    expected = {(c["id"], flag): c[flag] for c in found.candidates(run) for flag in flags}
    assert given == expected and len(expected) == 6
    for assessment in trace.info.assessments:
        assert assessment.metadata["candidate_id"] == spans[assessment.span_id]


def test_resumed_and_cached_cells_get_no_second_trace(server: FakeOllama, sqlite_uri: str) -> None:
    cfg = config(server, prompts=["v1"])
    collect(cfg, tracking_uri=sqlite_uri)
    result = collect(cfg, tracking_uri=sqlite_uri)
    assert (result.skipped, result.succeeded) == (2, 0)
    found = Found(sqlite_uri)
    assert len(found.traces()) == 2

    # a run deleted by hand: its cell comes back from the response cache, with its trace
    name, run = sorted(found.runs().items())[0]
    trace_id = run.data.tags["trace_id"]
    found.client.delete_run(run.info.run_id)
    chats = len(server.requests)
    assert collect(cfg, tracking_uri=sqlite_uri).succeeded == 1
    assert len(server.requests) == chats  # cached: nothing generated
    again = found.runs()[name]
    assert again.info.run_id != run.info.run_id
    assert again.data.tags["trace_id"] == trace_id
    assert len(found.traces()) == 2
    (trace,) = found.client.search_traces(locations=[found.experiment_id], run_id=again.info.run_id)
    assert trace.info.trace_id == trace_id
    assert trace.info.tags["run_id"] == again.info.run_id


def test_a_cached_cell_in_a_new_experiment_gets_its_trace(
    server: FakeOllama, sqlite_uri: str
) -> None:
    cfg = config(server, prompts=["v1"], n_scenarios=1)
    collect(cfg, tracking_uri=sqlite_uri)
    chats = len(server.requests)
    collect(cfg.model_copy(update={"experiment": "tip-bench-other"}), tracking_uri=sqlite_uri)
    assert len(server.requests) == chats
    (trace,) = Found(sqlite_uri, "tip-bench-other").traces()
    assert trace.info.tags["cached"] == "true"
    assert [s.name for s in trace.data.spans[1:2]] == ["cached answer"]


def test_prompt_versions_are_registered_once_and_linked(
    server: FakeOllama, sqlite_uri: str
) -> None:
    collect(config(server), tracking_uri=sqlite_uri)
    collect(config(server, experiment="tip-bench-second"), tracking_uri=sqlite_uri)
    client = mlflow.MlflowClient(sqlite_uri)
    suite = load_suite()
    versions = {v.tags["prompt_version"]: v for v in client.search_prompt_versions("tipbench-tips")}
    assert sorted(versions) == ["v1", "v2-mentor"]  # not registered again
    for name, version in versions.items():
        prompt = suite.prompt(name)
        assert version.tags["template_hash"] == prompt.template_hash
        assert version.template == [
            {"role": "system", "content": registry_template(prompt.system)},
            {"role": "user", "content": registry_template(prompt.user)},
        ]
    first, second = Found(sqlite_uri), Found(sqlite_uri, "tip-bench-second")
    experiments = client.get_prompt("tipbench-tips").tags["_mlflow_experiment_ids"]
    assert {first.experiment_id, second.experiment_id} <= set(experiments.split(","))
    used: dict[str, set[str]] = {name: set() for name in versions}
    for found in (first, second):
        for run in found.runs().values():
            version = versions[run.data.params["prompt_version"]]
            link = [{"name": "tipbench-tips", "version": str(version.version)}]
            assert json.loads(run.data.tags["mlflow.linkedPrompts"]) == link
            trace = found.client.get_trace(run.data.tags["trace_id"])
            assert json.loads(trace.info.tags["mlflow.linkedPrompts"]) == link
            used[run.data.params["prompt_version"]].add(run.info.run_id)
    # the Prompts page lists each version's runs from the version's `mlflow.prompt.run_ids`
    for name, version in versions.items():
        listed = client.get_prompt_version("tipbench-tips", version.version)
        assert set(listed.tags["mlflow.prompt.run_ids"].split(",")) == used[name]
        assert len(used[name]) == 4  # 2 scenarios in each of the 2 experiments
    # promote moves `production` on the version collect registered, and names its evidence
    tags = {"model": f"ollama:{QWEN}", "experiment": "tip-bench-auto"}
    registered = promote_prompt(client, "tipbench-tips", suite.prompt("v2-mentor"), tags)
    assert registered == int(versions["v2-mentor"].version)
    production = client.load_prompt("prompts:/tipbench-tips@production")
    assert production.version == registered
    assert {k: production.tags[k] for k in tags} == tags
    assert production.tags["prompt_version"] == "v2-mentor"
    assert len(client.search_prompt_versions("tipbench-tips")) == 2  # none registered anew


def test_genai_records_can_be_turned_off(server: FakeOllama, sqlite_uri: str) -> None:
    cfg = config(server, prompts=["v1"], genai_records=False)
    assert collect(cfg, tracking_uri=sqlite_uri).exit_code == 0
    found = Found(sqlite_uri)
    runs = found.runs()
    assert len(runs) == 2
    assert not found.traces()
    assert all("trace_id" not in run.data.tags for run in runs.values())
    assert "mlflow.experimentKind" not in found.experiment.tags
    assert found.client.get_prompt("tipbench-tips") is None


class PastedServer(ServerProcess):
    """A server started from a line pasted into a shell, `{port}` filled in."""

    health_path = "/health"

    def __init__(self, workdir: Path, line: str) -> None:
        super().__init__(workdir)
        self.line = line

    def command(self) -> list[str]:
        return ["bash", "-c", self.line.format(port=self.port)]

    def session(self) -> dict[int, str]:
        """Every process the line started (its session): pid, command line."""
        assert self.process is not None
        found = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[3]) == self.process.pid:  # the session id
                    found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
            except OSError:  # ended meanwhile
                pass
        return found

    def stop(self) -> None:
        """Stop the whole session: `mlflow ui`'s workers outlive their process group."""
        super().stop()
        for pid in self.session() if self.process is not None else {}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_collect_says_where_mlflow_shows_the_candidates_and_scores(
    server: FakeOllama, sqlite_uri: str, tmp_path: Path
) -> None:
    grid = ["--models", f"ollama:{QWEN}", "--ollama-url", server.url, "--prompts", "v1"]
    grid += ["--n-scenarios", "1", "--n-tips", "3", "--tracking-uri", sqlite_uri]
    done = tipbench("collect", *grid)
    assert done.returncode == 0, done.stderr
    experiment_id = Found(sqlite_uri).experiment_id
    traces = f"http://127.0.0.1:8767/#/experiments/{experiment_id}/traces"
    ui = f"MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false mlflow ui --backend-store-uri {sqlite_uri}"
    ui += " --port 8767"
    assert f"look at it: {ui}" in done.stdout
    assert f"its candidates and scores: {traces}" in done.stdout  # where `mlflow ui` serves
    # the command, as a user pastes it, serves the experiment without MLflow's job consumers
    # (on a port free here: the last --port is the one that counts)
    with PastedServer(tmp_path, f"{ui} --port {{port}}") as pasted:
        got = json.load(
            urlopen(f"{pasted.url}/api/2.0/mlflow/experiments/get?experiment_id={experiment_id}")
        )
        assert got["experiment"]["name"] == "tip-bench-auto"
        assert not [c for c in pasted.session().values() if "huey" in c]

    off = tipbench("collect", *grid, "--experiment", "tip-bench-runs", "--no-genai-records")
    assert off.returncode == 0, off.stderr
    assert "look at it" in off.stdout and "candidates and scores" not in off.stdout


@pytest.mark.slow
def test_traces_assessments_and_prompts_on_an_mlflow_server(
    server: FakeOllama, mlflow_server: MlflowServer, experiment: str
) -> None:
    cfg = config(server, prompts=["v1"], n_scenarios=1, experiment=experiment)
    assert collect(cfg, tracking_uri=mlflow_server.url).exit_code == 0
    found = Found(mlflow_server.url, experiment)
    (run,) = found.runs().values()
    (trace,) = found.traces()
    assert trace.info.trace_id == run.data.tags["trace_id"]
    assert trace.info.trace_metadata["mlflow.sourceRun"] == run.info.run_id
    assert [s.name for s in trace.data.spans][1:] == ["request 1: free", "c1", "c2", "c3"]
    flags = [a for a in trace.info.assessments if a.source.source_type == "CODE"]
    assert len(flags) == 6
    assert json.loads(run.data.tags["mlflow.linkedPrompts"])[0]["name"] == "tipbench-tips"
    assert found.experiment.tags["mlflow.experimentKind"] == "genai_development"
