"""Scores a person gives in MLflow's trace view reach the human tier: feedback logged through
MLflow's own API (`mlflow.log_feedback`, what its UI calls) on a candidate's span, by a
source on the allow-list of human judges, taken in by `judge apply --from-mlflow --human …`
with the judge file's checks, and not asked again by `judge export`. Feedback on the whole
trace is refused (whatever its metadata says); feedback from other sources is left out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource

from support.cells import record_cells
from support.cli import assert_one_line_error, tipbench
from support.servers import MlflowServer
from tipbench._errors import ConfigError
from tipbench.human_tier import (
    Item,
    JudgeFile,
    JudgeFileError,
    RubricRef,
    apply_judgements,
    apply_mlflow_feedback,
    export_pending,
)
from tipbench.human_tier._file import Candidate, CandidateScores
from tipbench.tracking import TrackingStore


@pytest.fixture
def as_global(sqlite_uri: str) -> Iterator[None]:
    """MLflow's fluent API (what a person's notebook uses) pointed at the test's store."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(sqlite_uri)
    yield
    mlflow.set_tracking_uri(previous)


def give(
    uri: str,
    run_id: str,
    candidate: str | None,
    name: str,
    value: object,
    who: str,
    metadata: dict[str, str] | None = None,
) -> None:
    """Feedback as a person adds it in the trace view: on the candidate's span (None: on the
    whole trace)."""
    client = MlflowClient(uri)
    trace = client.get_trace(client.get_run(run_id).data.tags["trace_id"])
    span = next((s.span_id for s in trace.data.spans if s.name == candidate), None)
    mlflow.log_feedback(
        trace_id=trace.info.trace_id,
        name=name,
        value=value,  # type: ignore[arg-type]
        source=AssessmentSource(source_type="HUMAN", source_id=who),
        span_id=span,
        metadata=metadata,
    )


def give_all(uri: str, run_id: str, who: str, relevance: int = 4) -> None:
    for cid in ("c1", "c2"):
        for name, value in (("relevance", relevance), ("actionability", 3), ("tone", 5)):
            give(uri, run_id, cid, name, value, who)


@pytest.mark.usefixtures("as_global")
def test_feedback_given_in_mlflow_becomes_the_human_tier(sqlite_uri: str, experiment: str) -> None:
    complete, partial = record_cells(sqlite_uri, experiment, traces=True)
    give_all(sqlite_uri, complete, "carol")
    give(sqlite_uri, partial, "c1", "relevance", 2, "dave")
    store = TrackingStore(sqlite_uri)

    result = apply_mlflow_feedback(store, experiment, humans={"carol", "dave", "erin"})

    assert (result.applied, result.incomplete, result.failed) == (1, 1, [])
    assert result.left_out == {}
    run = MlflowClient(sqlite_uri).get_run(complete)
    assert run.data.tags["judged_by"] == "carol" and run.data.tags["judge_kind"] == "human"
    assert run.data.tags["judge_pending"] == "false"
    assert run.data.metrics["relevance"] == 4 and run.data.metrics["tone"] == 5
    # the flags nobody gave come from the rules
    assert (run.data.metrics["format_ok"], run.data.metrics["overlong"]) == (1, 0)
    scores = json.loads(run.data.tags["human_scores"])
    assert scores == {"c1": [4, 3, 5, 1, 0], "c2": [4, 3, 5, 1, 0]}
    pending = MlflowClient(sqlite_uri).get_run(partial)
    assert pending.data.tags["judge_pending"] == "true"
    assert json.loads(pending.data.tags["human_draft"])["c1"] == [2, None, None, 1, 0]

    # again: nothing new, and no assessment is logged twice
    trace_id = run.data.tags["trace_id"]
    count = len(MlflowClient(sqlite_uri).get_trace(trace_id).info.assessments)
    again = apply_mlflow_feedback(store, experiment, humans={"carol", "dave", "erin"})
    assert (again.applied, again.unchanged) == (0, 0)
    assert len(MlflowClient(sqlite_uri).get_trace(trace_id).info.assessments) == count
    # a changed score in the trace view (a new feedback) is a new version
    give(sqlite_uri, complete, "c2", "tone", 2, "erin")
    changed = apply_mlflow_feedback(store, experiment, humans={"carol", "dave", "erin"})
    assert changed.applied == 1
    run = MlflowClient(sqlite_uri).get_run(complete)
    assert json.loads(run.data.tags["human_scores"])["c2"] == [4, 3, 2, 1, 0]
    assert run.data.tags["judged_by"] == "carol+erin"
    assert run.data.tags["human_scores_version"] == "2"


@pytest.mark.usefixtures("as_global")
def test_bad_feedback_is_refused_whole_with_a_line_each(sqlite_uri: str, experiment: str) -> None:
    good, bad = record_cells(sqlite_uri, experiment, traces=True)
    give_all(sqlite_uri, good, "carol")
    give(sqlite_uri, bad, "c1", "relevance", 7, "dave")
    give(sqlite_uri, bad, "c1", "tone", 3.5, "dave")
    give(sqlite_uri, bad, "c2", "actionability", "4", "dave")
    give(sqlite_uri, bad, "c2", "format_ok", True, "dave")
    give(sqlite_uri, bad, None, "relevance", 4, "dave")
    # on the whole trace, though its metadata names a candidate: still not a span's
    give(sqlite_uri, bad, None, "tone", 4, "dave", metadata={"candidate_id": "c1"})

    with pytest.raises(JudgeFileError) as raised:
        apply_mlflow_feedback(TrackingStore(sqlite_uri), experiment, humans={"carol", "dave"})

    problems = raised.value.problems
    assert len(problems) == 6
    assert any("c1" in p and "relevance" in p and "less than or equal to 5" in p for p in problems)
    assert any("tone" in p and "3.5" in p for p in problems)
    assert any("actionability" in p and "'4'" in p for p in problems)
    assert any("format_ok" in p and "True" in p for p in problems)
    trace_level = [p for p in problems if "given on the trace, not on a candidate's span" in p]
    assert len(trace_level) == 2 and any("tone by dave" in p for p in trace_level)
    assert all("by dave" in p for p in problems)
    untouched = MlflowClient(sqlite_uri).get_run(good)  # nothing written
    assert untouched.data.tags["judge_pending"] == "true"
    assert "relevance" not in untouched.data.metrics


@pytest.mark.usefixtures("as_global")
def test_only_the_listed_humans_are_taken(sqlite_uri: str, experiment: str) -> None:
    """Anyone who can write to MLflow can give HUMAN feedback under any name, the judge
    model's included: only the sources on the list count, the others are named as left out;
    with nobody on the list, nothing is taken."""
    listed, other = record_cells(sqlite_uri, experiment, traces=True)
    give_all(sqlite_uri, listed, "carol")
    give_all(sqlite_uri, other, "llamacpp:smollm2-135m")  # the judge model's name, as HUMAN
    give(sqlite_uri, listed, "c1", "tone", 1, "mallory")  # the latest on c1's tone
    store = TrackingStore(sqlite_uri)
    with pytest.raises(ConfigError, match="none is named: --human NAME,… or TIPBENCH_HUMAN"):
        apply_mlflow_feedback(store, experiment, humans=set())

    result = apply_mlflow_feedback(store, experiment, humans={"carol"})

    assert result.left_out == {"llamacpp:smollm2-135m": 6, "mallory": 1}
    assert (result.applied, result.incomplete) == (1, 0)
    client = MlflowClient(sqlite_uri)
    scores = json.loads(client.get_run(listed).data.tags["human_scores"])
    assert scores == {"c1": [4, 3, 5, 1, 0], "c2": [4, 3, 5, 1, 0]}  # carol's tone, not mallory's
    assert client.get_run(listed).data.tags["judged_by"] == "carol"
    assert client.get_run(other).data.tags["judge_pending"] == "true"
    assert "human_draft" not in client.get_run(other).data.tags
    # a judge file applied later by someone not on the list is the human tier's own record:
    # carol's older feedback does not undo it
    file = JudgeFile(
        experiment=experiment,
        exported_at="2026-01-01T00:00:00+00:00",
        judge="alice",
        rubric=RubricRef(id="tip-v1", text=[]),
        items=[
            Item(
                run_id=listed,
                scores_version=1,
                scenario={},
                candidates=[Candidate(id="c2", text="", scores=CandidateScores(
                    relevance=2, actionability=3, tone=5, format_ok=1, overlong=0))],
            )
        ],
    )  # fmt: skip
    assert apply_judgements(store, experiment, file, "alice").applied == 1
    again = apply_mlflow_feedback(store, experiment, humans={"carol"})
    assert (again.applied, again.unchanged) == (0, 0)
    scores = json.loads(client.get_run(listed).data.tags["human_scores"])
    assert scores["c2"] == [2, 3, 5, 1, 0]


@pytest.mark.usefixtures("as_global")
def test_export_does_not_ask_for_what_was_scored_in_mlflow(
    sqlite_uri: str, experiment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scores filled into the export would be applied as the judge's: only the listed
    humans' feedback is (the setting `TIPBENCH_HUMAN_JUDGES`), nobody's without it."""
    first, _ = record_cells(sqlite_uri, experiment, traces=True)
    give_all(sqlite_uri, first, "carol", relevance=2)
    path = tmp_path / "judge.json"

    unlisted = export_pending(TrackingStore(sqlite_uri), experiment, tmp_path / "before.json")
    monkeypatch.setenv("TIPBENCH_HUMAN_JUDGES", "alice, carol")
    result = export_pending(TrackingStore(sqlite_uri), experiment, path)

    assert unlisted.scored == 0
    assert result.scored == 2  # both candidates of the run scored in MLflow
    item = next(i for i in json.loads(path.read_text())["items"] if i["run_id"] == first)
    assert {c["id"]: c["scores"]["relevance"] for c in item["candidates"]} == {"c1": 2, "c2": 2}


@pytest.mark.usefixtures("as_global")
def test_cli_applies_from_mlflow(sqlite_uri: str, experiment: str) -> None:
    run_id, other = record_cells(sqlite_uri, experiment, traces=True)
    give_all(sqlite_uri, run_id, "carol")
    args = ("judge", "apply", "--experiment", experiment, "--tracking-uri", sqlite_uri)

    give(sqlite_uri, run_id, "c1", "tone", 5, "mallory")  # the same score: changes nothing
    give(sqlite_uri, other, "c1", "tone", 2, "mallory")

    nobody = tipbench(*args, "--from-mlflow")
    done = tipbench(*args, "--from-mlflow", "--human", "carol,dave")

    assert_one_line_error(nobody, "none is named: --human NAME,… or TIPBENCH_HUMAN_JUDGES")
    assert done.returncode == 0, done.stderr
    assert "applied 1 run" in done.stdout
    assert "left out: 1 score by 'mallory' (not on --human" in done.stderr
    assert MlflowClient(sqlite_uri).get_run(run_id).data.tags["judged_by"] == "carol"
    neither = tipbench(*args)
    assert neither.returncode == 2 and "a judge file or --from-mlflow" in neither.stderr


@pytest.mark.slow
def test_feedback_through_an_mlflow_server_counts(
    mlflow_server: MlflowServer, experiment: str
) -> None:
    """Over REST MLflow hands numeric feedback back as floats: whole ones are integers."""
    uri = mlflow_server.url
    run_id, _ = record_cells(uri, experiment, traces=True)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        give_all(uri, run_id, "carol")
    finally:
        mlflow.set_tracking_uri(previous)
    result = apply_mlflow_feedback(TrackingStore(uri), experiment, humans={"carol"})
    assert (result.applied, result.failed) == (1, [])
    scores = json.loads(MlflowClient(uri).get_run(run_id).data.tags["human_scores"])
    assert scores == {"c1": [4, 3, 5, 1, 0], "c2": [4, 3, 5, 1, 0]}
