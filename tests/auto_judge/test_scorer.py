"""tipbench's rubric judge as an MLflow GenAI scorer: `mlflow.genai.evaluate` over the traces
collect writes, scored by the real embedded judge (SmolLM2-135M through llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import mlflow
import pytest
from mlflow import MlflowClient

from support.cells import record_cells
from tipbench import ConfigError, ModelTooLarge
from tipbench.auto_judge import parse_scores, scorer

EMBEDDED = "llamacpp:smollm2-135m"


@pytest.fixture
def as_global(sqlite_uri: str) -> Iterator[None]:
    """`mlflow.genai.evaluate` works on MLflow's global tracking URI, as its users set it."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(sqlite_uri)
    yield
    mlflow.set_tracking_uri(previous)


@pytest.mark.slow
@pytest.mark.usefixtures("as_global")
def test_evaluate_scores_each_candidate_of_a_cell_trace(sqlite_uri: str, experiment: str) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1, traces=True)
    experiment_id = mlflow.get_experiment_by_name(experiment).experiment_id
    mlflow.set_experiment(experiment_id=experiment_id)
    traces = mlflow.search_traces(locations=[experiment_id])

    with scorer(judge_model=EMBEDDED) as rubric:
        result = mlflow.genai.evaluate(data=traces, scorers=[rubric])

    for name in ("relevance", "actionability", "tone"):
        assert 1 <= result.metrics[f"{name}/mean"] <= 5
    assert 2 <= result.metrics["composite/mean"] <= 17
    client = MlflowClient(sqlite_uri)
    trace = client.get_trace(client.get_run(run_id).data.tags["trace_id"])
    judged = [a for a in trace.info.assessments if a.source.source_type == "LLM_JUDGE"]
    by_candidate: dict[str, dict[str, float]] = {}
    for assessment in judged:
        assert assessment.source.source_id == EMBEDDED
        answer = parse_scores(assessment.rationale or "")  # the judge's raw answer
        assert answer is not None
        if assessment.name in ("relevance", "actionability", "tone"):
            assert assessment.value == getattr(answer, assessment.name)
        by_candidate.setdefault(assessment.metadata["candidate_id"], {})[assessment.name] = (
            assessment.value
        )
    assert sorted(by_candidate) == ["c1", "c2"]
    flags = {  # the rules' flags, as the automatic tier keeps them
        a.metadata["candidate_id"]: a.value
        for a in trace.info.assessments
        if a.source.source_type == "CODE" and a.name == "format_ok"
    }
    for cid, scores in by_candidate.items():
        criteria = scores["relevance"] + scores["actionability"] + scores["tone"]
        assert scores["composite"] == criteria + 2 * flags[cid] - 0


def test_the_size_guard_applies_before_anything_is_loaded() -> None:
    with pytest.raises(ModelTooLarge):
        scorer(judge_model=EMBEDDED, max_model_b=0.01)


def test_a_trace_that_is_not_a_cells_is_an_error_not_a_score() -> None:
    rubric = scorer(judge_model=EMBEDDED)
    with pytest.raises(ConfigError, match="not the trace of a tipbench cell"):
        rubric(inputs={"question": "hi"}, outputs="hello")
    assert json.loads(rubric.model_dump_json())["judge_model"] == EMBEDDED
