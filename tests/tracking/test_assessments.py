"""Every score is an assessment on its candidate's span of the cell's trace, read back
through MLflow's own client: HUMAN with the judge's name, LLM_JUDGE with the judge model
and its raw answer, CODE for the rules' flags; a changed human score overrides the earlier
assessment, which MLflow keeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.entities import Feedback, Trace

from support.cells import record_cells
from support.ollama_server import FakeOllama, ModelEntry
from tipbench.auto_judge import AutoJudgeConfig, auto_judge
from tipbench.backends import RetryPolicy
from tipbench.human_tier import apply_judge_file, export_pending
from tipbench.tracking import TrackingStore

JUDGE = "gemma3:1b"


def trace_of(uri: str, run_id: str) -> Trace:
    client = MlflowClient(uri)
    return client.get_trace(client.get_run(run_id).data.tags["trace_id"])


def feedback(trace: Trace, source_type: str, valid: bool = True) -> dict[tuple[str, str], Any]:
    """`{(candidate, name): feedback}` of one source type, by the candidate's span name."""
    spans = {span.span_id: span.name for span in trace.data.spans}
    found = {}
    for a in trace.info.assessments:
        if isinstance(a, Feedback) and a.source.source_type == source_type and a.valid == valid:
            key = (spans[a.span_id], a.name)
            assert key not in found, f"{key} logged twice"
            found[key] = a
    return found


def score_file(uri: str, experiment: str, path: Path, relevance: int = 4) -> Path:
    export_pending(TrackingStore(uri), experiment, path)
    data = json.loads(path.read_text())
    for item in data["items"]:
        for candidate in item["candidates"]:
            candidate["scores"].update(relevance=relevance, actionability=3, tone=5)
    path.write_text(json.dumps(data))
    return path


def test_human_scores_are_human_assessments_and_a_change_overrides(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1, traces=True)
    store = TrackingStore(sqlite_uri)
    path = score_file(sqlite_uri, experiment, tmp_path / "judge.json")
    assert apply_judge_file(store, experiment, path, judged_by="alice").applied == 1

    human = feedback(trace_of(sqlite_uri, run_id), "HUMAN")
    names = ("relevance", "actionability", "tone", "format_ok", "overlong", "composite")
    assert sorted(human) == sorted((cid, name) for cid in ("c1", "c2") for name in names)
    assert {(k, a.value) for k, a in human.items() if k[1] == "relevance"} == {
        (("c1", "relevance"), 4),
        (("c2", "relevance"), 4),
    }
    assert human[("c1", "composite")].value == 4 + 3 + 5 + 2 * 1 - 0
    assert {a.source.source_id for a in human.values()} == {"alice"}
    assert {a.metadata["candidate_id"] for a in human.values()} == {"c1", "c2"}
    assert {a.metadata["tipbench.version"] for a in human.values()} == {"1"}

    # the same file again: nothing new; a changed relevance: overrides only what changed
    apply_judge_file(store, experiment, path, judged_by="alice")
    assert len(trace_of(sqlite_uri, run_id).info.assessments) == 4 + 12
    data = json.loads(path.read_text())
    c1 = next(c for c in data["items"][0]["candidates"] if c["id"] == "c1")
    c1["scores"]["relevance"] = 2
    path.write_text(json.dumps(data))
    assert apply_judge_file(store, experiment, path, judged_by="bob").applied == 1
    trace = trace_of(sqlite_uri, run_id)
    now, before = feedback(trace, "HUMAN"), feedback(trace, "HUMAN", valid=False)
    assert now[("c1", "relevance")].value == 2
    assert now[("c1", "relevance")].source.source_id == "bob"
    assert now[("c1", "relevance")].overrides == before[("c1", "relevance")].assessment_id
    assert before[("c1", "relevance")].value == 4  # MLflow keeps the history
    assert sorted(before) == [("c1", "composite"), ("c1", "relevance")]
    assert now[("c1", "tone")].source.source_id == "alice"  # unchanged: not logged again


def test_runs_without_a_trace_are_scored_as_before(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1)
    path = score_file(sqlite_uri, experiment, tmp_path / "judge.json")
    result = apply_judge_file(TrackingStore(sqlite_uri), experiment, path, judged_by="alice")
    assert (result.applied, result.failed) == (1, [])
    assert MlflowClient(sqlite_uri).get_run(run_id).data.metrics["relevance"] == 4


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    entry = ModelEntry(parameter_count=999_885_952, parameter_size="999.89M")
    with FakeOllama({JUDGE: entry}) as fake:
        yield fake


def test_automatic_scores_are_llm_judge_assessments_with_the_raw_answer(
    server: FakeOllama, sqlite_uri: str, experiment: str
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1, traces=True)
    config = AutoJudgeConfig(
        experiment=experiment, judge_model=f"ollama:{JUDGE}", ollama_url=server.url
    )
    store = TrackingStore(sqlite_uri)
    result = auto_judge(store, config, retry=RetryPolicy(attempts=2, backoff_s=0.01))
    assert result.exit_code == 0

    trace = trace_of(sqlite_uri, run_id)
    auto = feedback(trace, "LLM_JUDGE")
    names = ("relevance", "actionability", "tone", "composite")
    assert sorted(auto) == sorted((cid, name) for cid in ("c1", "c2") for name in names)
    run = MlflowClient(sqlite_uri).get_run(run_id)
    stored = json.loads(run.data.tags["auto_scores"])
    answers = json.loads(
        Path(MlflowClient(sqlite_uri).download_artifacts(run_id, "auto_answers.json")).read_text()
    )
    for (cid, name), assessment in auto.items():
        assert assessment.source.source_id == f"ollama:{JUDGE}"
        assert assessment.rationale == answers["candidates"][cid][-1]["text"]
        if name == "relevance":
            assert assessment.value == stored[cid][0]
    # the rules' flags stay CODE assessments; the automatic tier does not repeat them
    code = feedback(trace, "CODE")
    assert sorted(code) == [(c, n) for c in ("c1", "c2") for n in ("format_ok", "overlong")]
    assert {a.source.source_id for a in code.values()} == {"rules:tip-v1"}
