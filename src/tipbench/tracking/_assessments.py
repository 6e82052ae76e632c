"""Scores as MLflow assessments: each candidate's scores as feedback on its cell's trace.

Every score a candidate gets is also an assessment on the candidate's span of its cell's
trace (`tipbench.tracking._trace`), with its source:

- the rubric's rules: `format_ok` and `overlong`, source CODE (`rules:<rubric>`), logged with
  the trace by collect;
- the automatic tier: `relevance`, `actionability`, `tone` and `composite`, source LLM_JUDGE
  with the judge model, the judge's raw answer as rationale (it keeps the rules' flags);
- the human tier: all five scores and `composite`, source HUMAN with the judge's name.

Metadata names the candidate and, for a tier, the version of its scores. A tier's changed
score overrides its earlier assessment (MLflow keeps that one, marked not valid); an
unchanged one is not logged again. A person may add feedback in MLflow's trace view too:
`human_feedback` reads it back (the latest valid HUMAN feedback per candidate and score).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipbench.suite import CRITERIA, FLAGS, SCORE_NAMES
from tipbench.tracking._scores import Scores, Tier
from tipbench.tracking._trace import candidate_of_span, candidate_span_id, tracing_client

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Assessment, Feedback, TraceInfo

COMPOSITE = "composite"
#: Assessment metadata: which candidate, and which tier and version of its scores.
CANDIDATE_KEY = "candidate_id"
TIER_KEY = "tipbench.tier"
VERSION_KEY = "tipbench.version"

HUMAN, LLM_JUDGE, CODE = "HUMAN", "LLM_JUDGE", "CODE"
_SOURCE_OF_TIER: dict[Tier, str] = {"human": HUMAN, "auto": LLM_JUDGE}
#: The scores each tier logs: the automatic tier keeps the rules' flags, logged as CODE.
_NAMES_OF_TIER: dict[Tier, tuple[str, ...]] = {
    "human": (*SCORE_NAMES, COMPOSITE),
    "auto": (*CRITERIA, COMPOSITE),
}


def rules_source_id(rubric_id: str) -> str:
    return f"rules:{rubric_id}"


def rule_assessments(
    trace_id: str, flags: Mapping[str, Mapping[str, int]], rubric_id: str
) -> list[Assessment]:
    """The rules' flags of each candidate (`{"c1": {"format_ok": 1, "overlong": 0}}`) as
    CODE feedback, to log with the trace."""
    from mlflow.entities import AssessmentSource, Feedback

    source = AssessmentSource(source_type=CODE, source_id=rules_source_id(rubric_id))
    return [
        Feedback(
            name=name,
            value=int(values[name]),
            source=source,
            trace_id=trace_id,
            span_id=candidate_span_id(trace_id, cid),
            metadata={CANDIDATE_KEY: cid},
        )
        for cid, values in flags.items()
        for name in FLAGS
    ]


@dataclass(frozen=True)
class _Wanted:
    candidate: str
    name: str
    value: float | int
    rationale: str | None
    overrides: str | None


def log_scores(
    client: MlflowClient,
    trace_id: str,
    tier: Tier,
    scores: Mapping[str, Scores],
    judged_by: str,
    version: int,
    rationales: Mapping[str, str] | None = None,
) -> int:
    """Log a tier's scores on a trace: each changed or new score as feedback on its
    candidate's span; return how many were logged.

    A score whose current assessment from the same kind of source (HUMAN or LLM_JUDGE)
    already has its value is left alone; a different one is overridden.
    """
    from mlflow.entities import AssessmentSource, Feedback

    source_type = _SOURCE_OF_TIER[tier]
    tracing = tracing_client(client)
    current = _current(tracing.get_trace_info(trace_id), source_type)
    wanted = []
    for cid, candidate in scores.items():
        values: dict[str, float | int] = {**candidate.as_dict(), COMPOSITE: candidate.composite}
        for name in _NAMES_OF_TIER[tier]:
            earlier = current.get((cid, name))
            if earlier is not None and _same(earlier.value, values[name]):
                continue
            rationale = (rationales or {}).get(cid)
            overrides = earlier.assessment_id if earlier is not None else None
            wanted.append(_Wanted(cid, name, values[name], rationale, overrides))
    source = AssessmentSource(source_type=source_type, source_id=judged_by)

    def log(item: _Wanted) -> None:
        feedback = Feedback(
            name=item.name,
            value=item.value,
            source=source,
            trace_id=trace_id,
            span_id=candidate_span_id(trace_id, item.candidate),
            rationale=item.rationale,
            metadata={CANDIDATE_KEY: item.candidate, TIER_KEY: tier, VERSION_KEY: str(version)},
            overrides=item.overrides,
        )
        tracing.log_assessment(trace_id, feedback)

    for item in wanted:
        log(item)
    return len(wanted)


def _same(value: object, wanted: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == wanted


def _current(info: TraceInfo, source_type: str) -> dict[tuple[str, str], Feedback]:
    """The latest valid feedback from `source_type` per (candidate, name) on a trace."""
    from mlflow.entities import Feedback

    latest: dict[tuple[str, str], Feedback] = {}
    for assessment in sorted(info.assessments, key=lambda a: a.create_time_ms or 0):
        if not isinstance(assessment, Feedback) or assessment.valid is False:
            continue
        if assessment.source.source_type != source_type:
            continue
        cid = (assessment.metadata or {}).get(CANDIDATE_KEY)
        if cid is None:
            continue
        latest[(cid, assessment.name)] = assessment
    return latest


@dataclass(frozen=True)
class GivenScore:
    """One score a person gave in MLflow: human feedback on a candidate of a cell's trace."""

    candidate: str | None  # None: the feedback is not on a candidate's span
    name: str
    value: object
    source_id: str
    assessment_id: str


def human_feedback(
    info: TraceInfo, candidate_count: int, sources: Container[str] | None = None
) -> list[GivenScore]:
    """The latest valid HUMAN feedback per candidate and score name on a cell's trace
    (tipbench's own and a person's alike), candidates told by the span the feedback is on.

    With `sources`, only feedback from those sources counts, and tipbench's own records of
    the human tier (whoever they name), which mark what the tier already holds. Feedback
    named like no score is left out; feedback on no candidate's span (on the whole trace,
    even with metadata naming a candidate) is kept with `candidate=None`, for the caller to
    report.
    """
    from mlflow.entities import Feedback

    latest: dict[tuple[str | None, str], GivenScore] = {}
    for assessment in sorted(info.assessments, key=lambda a: a.create_time_ms or 0):
        if not isinstance(assessment, Feedback) or assessment.valid is False:
            continue
        if assessment.source.source_type != HUMAN or assessment.name not in SCORE_NAMES:
            continue
        recorded = (assessment.metadata or {}).get(TIER_KEY) == "human"
        if sources is not None and assessment.source.source_id not in sources and not recorded:
            continue
        cid = candidate_of_span(info.trace_id, assessment.span_id, candidate_count)
        latest[(cid, assessment.name)] = GivenScore(
            cid,
            assessment.name,
            assessment.value,
            assessment.source.source_id or "",
            assessment.assessment_id or "",
        )
    return list(latest.values())


def human_comments(client: MlflowClient, trace_id: str, candidate_count: int) -> dict[str, str]:
    """What people wrote about a cell's candidates in MLflow: the rationales of the valid
    HUMAN feedback on each candidate's span of the trace, joined per candidate (the comments
    `tipbench optimize` shows its reflection model). Best effort: empty if the trace cannot
    be read."""
    from mlflow.entities import Feedback

    try:
        info = tracing_client(client).get_trace_info(trace_id)
    except Exception:  # a missing or unreadable trace has no comments to give
        return {}
    comments: dict[str, list[str]] = {}
    for assessment in sorted(info.assessments, key=lambda a: a.create_time_ms or 0):
        if not isinstance(assessment, Feedback) or assessment.valid is False:
            continue
        if assessment.source.source_type != HUMAN or not assessment.rationale:
            continue
        cid = (assessment.metadata or {}).get(CANDIDATE_KEY) or candidate_of_span(
            info.trace_id, assessment.span_id, candidate_count
        )
        if cid is not None and assessment.rationale not in comments.get(cid, []):
            comments.setdefault(cid, []).append(assessment.rationale)
    return {cid: " / ".join(texts) for cid, texts in comments.items()}
