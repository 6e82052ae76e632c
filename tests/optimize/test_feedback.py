"""What the reflection model reads: the judge's per-criterion scores and the rules' flags of
the tips, and the scores and comments people already gave in the experiment (here, in
MLflow's trace view, taken into the human tier with `judge apply --from-mlflow`)."""

from __future__ import annotations

from collections.abc import Iterator

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource

from support.ollama_server import FakeOllama
from support.scripted_world import MORNING, REFLECTION, TRAINING, Heard, reflection, said, settings
from tipbench.collect import collect
from tipbench.human_tier import apply_mlflow_feedback
from tipbench.optimize import optimize
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

V1 = load_suite().prompt("v1")
COMMENT = "Too vague: say when to do it."


@pytest.fixture
def as_global(sqlite_uri: str) -> Iterator[None]:
    """MLflow's fluent API (what a person's notebook or the trace view uses) on the store."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(sqlite_uri)
    yield
    mlflow.set_tracking_uri(previous)


def give(uri: str, run_id: str, candidate: str, name: str, value: int, comment: str = "") -> None:
    """A person's score (and comment) on a candidate's span, as MLflow's trace view logs it."""
    client = MlflowClient(uri)
    trace = client.get_trace(client.get_run(run_id).data.tags["trace_id"])
    span = next(s.span_id for s in trace.data.spans if s.name == candidate)
    mlflow.log_feedback(
        trace_id=trace.info.trace_id,
        name=name,
        value=value,
        source=AssessmentSource(source_type="HUMAN", source_id="ann"),
        span_id=span,
        rationale=comment or None,
    )


@pytest.mark.usefixtures("as_global")
def test_the_reflection_reads_judge_scores_rule_flags_and_a_persons_scores_and_comment(
    world: FakeOllama, sqlite_uri: str
) -> None:
    config = settings(world, budget=8, heldout=False)
    morning = TRAINING[0]
    collected = collect(
        config.grid(["v1"], list(TRAINING), config.experiment), tracking_uri=sqlite_uri
    )
    assert collected.exit_code == 0
    store = TrackingStore(sqlite_uri)
    runs = store.cell_runs(store.experiment_id(config.experiment))
    run_id = next(r.run_id for r in runs if r.scenario_id == morning)
    for candidate in ("c1", "c2", "c3"):
        give(sqlite_uri, run_id, candidate, "relevance", 1, COMMENT if candidate == "c1" else "")
        give(sqlite_uri, run_id, candidate, "actionability", 2)
        give(sqlite_uri, run_id, candidate, "tone", 4)
    assert apply_mlflow_feedback(store, config.experiment, humans=("ann",)).applied == 1
    world.script(REFLECTION, [reflection(said(V1, "system", MORNING))])

    optimize(config, tracking_uri=sqlite_uri, progress=Heard())

    (asked,) = [r for r in world.requests if r["model"] == REFLECTION and r["messages"]]
    prompt = asked["messages"][-1]["content"]
    assert f"a person's comment: {COMMENT}" in prompt
    assert "a person: relevance 1, actionability 2, tone 4" in prompt
    assert "judge: relevance 3, actionability 3, tone 3" in prompt  # the world's judge
    assert "rules: format_ok 1, overlong 0" in prompt
    assert prompt.count("a person:") == 3  # the morning's three tips; nobody judged the evening
