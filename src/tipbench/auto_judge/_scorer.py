"""tipbench's rubric judge as an MLflow GenAI scorer, for `mlflow.genai.evaluate`.

    import mlflow
    from tipbench.auto_judge import scorer

    traces = mlflow.search_traces(locations=[experiment_id])
    with scorer(judge_model="llamacpp:smollm2-135m") as rubric:
        mlflow.genai.evaluate(data=traces, scorers=[rubric])

The scorer reads a cell's trace as collect wrote it (the scenario in the inputs, the
candidates in the outputs) and scores each candidate with the automatic tier's judge, on
the same rubric, prompt and settings: per candidate `relevance`, `actionability`, `tone`
and `composite` (with the rules' flags, as the automatic tier keeps them), each on the
candidate's span, source LLM_JUDGE and the judge model, the judge's raw answer as rationale.
The judge model is checked against the size guard when the scorer is made, loaded at its
first use, kept for the next (one request at a time) and freed by `close()`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mlflow.genai.scorers import Scorer
from pydantic import PrivateAttr

from tipbench._errors import ConfigError
from tipbench._phase import SilentProgress
from tipbench.auto_judge._judge import DEFAULT_JUDGE_MODEL, CandidateJudge, judge_options
from tipbench.backends import (
    DEFAULT_STRUCTURED,
    Backend,
    BackendOptions,
    ModelSpec,
    RetryPolicy,
    StructuredMode,
    call_with_retries,
    open_checked,
)
from tipbench.suite import CRITERIA, load_suite
from tipbench.tracking import (
    CANDIDATE_KEY,
    LLM_JUDGE,
    CellCandidates,
    RecordedCandidate,
    candidate_span_id,
)

if TYPE_CHECKING:
    from mlflow.entities import Feedback, Trace

SCORER_NAME = "tipbench_rubric"


class RubricScorer(Scorer):
    """Scores the candidates of a cell's trace with tipbench's rubric judge (see module)."""

    name: str = SCORER_NAME
    judge_model: str = DEFAULT_JUDGE_MODEL
    timeout: int | float | None = 0  # a small local model may take minutes per trace

    _judge: CandidateJudge | None = PrivateAttr(default=None)
    _loaded: bool = PrivateAttr(default=False)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __call__(
        self,
        *,
        inputs: Any = None,
        outputs: Any = None,
        expectations: dict[str, Any] | None = None,
        trace: Trace | None = None,
        session: list[Trace] | None = None,
    ) -> list[Feedback]:
        """Each candidate's scores as feedback (expectations and sessions are not used)."""
        from mlflow.entities import AssessmentSource, Feedback

        candidates = _candidates(outputs)
        scenario = (inputs or {}).get("scenario", {}) if isinstance(inputs, dict) else {}
        cell = CellCandidates("", "", "", scenario, candidates)
        judge = self._ready()
        with self._lock:
            verdict = judge.cell(trace.info.trace_id if trace else "trace", cell)
        if verdict.error is not None:
            raise ConfigError(f"the judge could not score the trace: {verdict.error}")
        scores = verdict.scores  # the judge's criteria, the rules' flags
        source = AssessmentSource(source_type=LLM_JUDGE, source_id=self.judge_model)
        trace_id = trace.info.trace_id if trace is not None else None
        feedback = []
        for cid, candidate_scores in scores.items():
            rationale = verdict.answers[cid][-1].text if verdict.answers.get(cid) else None
            values: dict[str, float] = {n: getattr(candidate_scores, n) for n in CRITERIA}
            values["composite"] = candidate_scores.composite
            for name, value in values.items():
                feedback.append(
                    Feedback(
                        name=name,
                        value=value,
                        source=source,
                        rationale=rationale,
                        span_id=candidate_span_id(trace_id, cid) if trace_id else None,
                        metadata={CANDIDATE_KEY: cid},
                    )
                )
        return feedback

    def close(self) -> None:
        """Free the judge model (the scorer loads it again if used after)."""
        with self._lock:
            if self._judge is not None and self._loaded:
                self._judge.backend.unload()
                self._loaded = False

    def __enter__(self) -> RubricScorer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _ready(self) -> CandidateJudge:
        with self._lock:
            judge = self._judge
            if judge is None:
                raise ConfigError("make the scorer with tipbench.auto_judge.scorer(...)")
            if not self._loaded:
                call_with_retries(lambda _: judge.backend.load(), judge.retry)
                self._loaded = True
            return judge


def scorer(
    judge_model: str = DEFAULT_JUDGE_MODEL,
    *,
    suite: str | Path | None = None,
    max_model_b: float = 4.0,
    allow_unknown_size: bool = False,
    options: BackendOptions | None = None,
    structured: StructuredMode = DEFAULT_STRUCTURED,
    retry: RetryPolicy | None = None,
) -> RubricScorer:
    """tipbench's rubric judge on `judge_model` as an MLflow GenAI scorer.

    Args:
        judge_model: The judge's model spec, as for `judge auto --judge-model`.
        suite: The suite whose rubric to score with [default: the bundled one].
        max_model_b: The size guard, as for the automatic tier.
        allow_unknown_size: Accept a model whose size is not known.
        options: Where the backends' servers are [default: from the environment].
        structured: The judge's structured mode, as for the automatic tier.
        retry: Retries of failed or unparsable answers, per candidate.

    Raises:
        TipbenchError: the model spec is malformed, the model unknown or over the size
            guard (before anything is loaded).
    """
    spec = ModelSpec.parse(judge_model)
    options = judge_options(options or BackendOptions())
    opened = open_checked(spec, options, max_model_b, allow_unknown_size)
    backend: Backend = opened.backend
    rubric = load_suite(suite).rubric
    made = RubricScorer(judge_model=str(spec))
    made._judge = CandidateJudge(
        backend, rubric.text(), retry or RetryPolicy(), SilentProgress(), structured
    )
    return made


def _candidates(outputs: Any) -> tuple[RecordedCandidate, ...]:
    """The candidates in a cell trace's outputs (`{"candidates": [...]}`).

    Raises:
        ConfigError: the outputs are not a tipbench cell's.
    """
    found = outputs.get("candidates") if isinstance(outputs, dict) else None
    if not found:
        raise ConfigError("not the trace of a tipbench cell with candidates (outputs.candidates)")
    return tuple(RecordedCandidate.model_validate(candidate) for candidate in found)
