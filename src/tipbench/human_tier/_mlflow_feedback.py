"""Scores a person gave in MLflow's trace view: the human tier's other way in.

A person who adds feedback named like a score (`relevance`, `actionability`, `tone`,
`format_ok`, `overlong`) on a candidate's span of a cell's trace, in MLflow's UI or through
its API, is a human judge, if the feedback's source is on the allow-list of human judges
(`humans`: `judge apply --from-mlflow --human NAME,…` or `TIPBENCH_HUMAN_JUDGES`; nobody by
default, and then nothing is taken). `apply_mlflow_feedback` takes that feedback into the
human tier as a judge file would be: checked whole first (integers in the file's ranges, on
a candidate's span of a judgeable run; feedback on the whole trace is refused even when its
metadata names a candidate), nothing written if anything is wrong; a candidate's scores not
given there come from the run's scores, its draft, or the rules' flags. Each run is judged by
whoever gave its feedback. `feedback_drafts` fills the same scores into an export, so that
the judge file does not ask for them again.

The trust model: MLflow decides who can write feedback (its own authentication and
permissions; a server without them lets anyone who reaches it write under any name, and its
UI records the source `User`). A feedback's source is a name the writer chose, not an
identity MLflow checked, so the allow-list says whose names tipbench takes, never who wrote:
on an open server it keeps stray and automated feedback out (a judge model's name included),
not a forger. The latest feedback on each score decides; one from a source not on the list is
left out (and counted, per source, in the result).

Blindness does not apply there: MLflow's trace view shows the model and prompt version.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from tipbench._errors import ConfigError, TrackingError
from tipbench.human_tier._apply import ApplyResult, apply_judgements
from tipbench.human_tier._file import (
    Candidate,
    CandidateScores,
    Item,
    JudgeFile,
    JudgeFileError,
    RubricRef,
)
from tipbench.suite import SCORE_NAMES
from tipbench.tracking import (
    CANDIDATE_KEY,
    CODE,
    KIND_CELL,
    KIND_TAG,
    CellRun,
    Draft,
    GivenScore,
    TrackingStore,
    human_feedback,
    short_error,
)

if TYPE_CHECKING:
    from mlflow.entities import TraceInfo

#: Where versions written from MLflow's feedback came from (a score version's `source`).
SOURCE_MLFLOW = "mlflow"
_PAGE = 500


#: The allow-list of human judges whose MLflow feedback `judge apply --from-mlflow` takes.
HUMAN_JUDGES_VARIABLE = "TIPBENCH_HUMAN_JUDGES"


@dataclass(frozen=True)
class _RunFeedback:
    run: CellRun
    scores: dict[str, CandidateScores]  # the candidates with feedback, completed from the run
    judges: tuple[str, ...]  # who gave it


@dataclass
class FeedbackApplyResult(ApplyResult):
    """`ApplyResult`, and the scores left out because their source is not on the list."""

    left_out: dict[str, int] = field(default_factory=dict)  # source → scores not taken


@dataclass(frozen=True)
class _Found:
    """What the experiment's traces hold: the runs with feedback to take, its problems, and
    the scores of sources not on the list."""

    runs: list[_RunFeedback]
    problems: list[str]
    left_out: dict[str, int]


def parse_humans(value: str | None) -> frozenset[str]:
    """The names of a comma-separated allow-list (`--human alice,bob`)."""
    return frozenset(name.strip() for name in (value or "").split(",") if name.strip())


def require_humans(humans: Collection[str]) -> None:
    """Refuse an empty allow-list: nobody's feedback would be taken.

    Raises:
        ConfigError: `humans` is empty.
    """
    if not humans:
        raise ConfigError(
            "judge apply --from-mlflow takes the feedback of the human judges you name, and "
            f"none is named: --human NAME,… or {HUMAN_JUDGES_VARIABLE} (MLflow lets anyone "
            "who can write to it give feedback under any name)"
        )


def apply_mlflow_feedback(
    store: TrackingStore,
    experiment: str,
    judged_by: str | None = None,
    *,
    humans: Collection[str],
    force: bool = False,
) -> FeedbackApplyResult:
    """Take the human feedback given on the experiment's traces into the human tier.

    Args:
        store: The MLflow store the experiment lives in.
        experiment: The experiment's name.
        judged_by: Who scored [default: whoever gave each run's feedback].
        humans: The feedback sources taken as human judges; others are left out.
        force: Passed on to `apply_judgements`.

    Raises:
        ConfigError: `humans` is empty: nobody's feedback would be taken.
        JudgeFileError: every problem of the feedback, one line each (source `MLflow`);
            nothing is written then.
        TrackingError: the store cannot be read.
    """
    require_humans(humans)
    experiment_id = store.experiment_id(experiment)
    runs = store.cell_runs(experiment_id, judgeable=True)
    found = _feedback(store, experiment_id, runs, frozenset(humans))
    if found.problems:
        raise JudgeFileError("MLflow", found.problems)
    by_judge: dict[str, list[_RunFeedback]] = {}
    for feedback in found.runs:
        judge = judged_by or "+".join(feedback.judges)
        by_judge.setdefault(judge, []).append(feedback)
    result = FeedbackApplyResult(left_out=found.left_out)
    for judge, group in sorted(by_judge.items()):
        judge_file = JudgeFile(
            experiment=experiment,
            exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
            judge=judge,
            rubric=RubricRef(id=group[0].run.rubric, text=[]),
            items=[_item(feedback) for feedback in group],
        )
        done = apply_judgements(
            store, experiment, judge_file, judge, "MLflow", force=force, written_from=SOURCE_MLFLOW
        )
        _add(result, done)
    return result


def feedback_drafts(
    store: TrackingStore, runs: list[CellRun], humans: Collection[str] | None = None
) -> dict[str, Draft]:
    """Each run's draft with the valid scores given in MLflow by the `humans` (default: the
    allow-list of `TIPBENCH_HUMAN_JUDGES`; none: nothing) filled in (for an export): feedback
    that would not pass `apply --from-mlflow` is left out here."""
    drafts = {run.run_id: run.draft() for run in runs}
    listed = frozenset(humans) if humans is not None else human_judges_setting()
    if not listed or not any(run.trace_id for run in runs):
        return drafts
    try:
        experiment_id = store.client.get_run(runs[0].run_id).info.experiment_id
        given = _feedback(store, experiment_id, runs, listed).runs
    except Exception:  # MLflow's feedback is a bonus here: the export goes on without it
        return drafts
    for feedback in given:
        draft = drafts[feedback.run.run_id]
        for cid, scores in feedback.scores.items():
            draft[cid] = scores.values()
    return drafts


def human_judges_setting() -> frozenset[str]:
    """The allow-list set in `TIPBENCH_HUMAN_JUDGES` (comma-separated; unset: nobody)."""
    return parse_humans(os.environ.get(HUMAN_JUDGES_VARIABLE))


def _feedback(
    store: TrackingStore, experiment_id: str, runs: list[CellRun], humans: frozenset[str]
) -> _Found:
    """The runs whose traces hold feedback of the `humans` that differs from their stored
    human scores, every problem of that feedback, and the scores of other sources that
    differ from what the human tier holds or takes."""
    traced = {run.trace_id: run for run in runs if run.trace_id}
    infos = {info.trace_id: info for info in _trace_infos(store, experiment_id) if info.trace_id}
    found, problems, left_out = [], [], Counter[str]()
    for trace_id, run in sorted(traced.items(), key=lambda item: item[1].label):
        info = infos.get(trace_id)
        if info is None:
            continue
        latest = human_feedback(info, run.candidate_count, sources=humans)
        given = [score for score in latest if score.source_id in humans]
        run_problems = [_problem(run, score) for score in given]
        problems += [p for p in run_problems if p]
        scores = {} if any(run_problems) else _completed(run, info, given)
        left_out.update(s.source_id or "(no name)" for s in _unlisted(run, info, humans, scores))
        if scores:
            found.append(_RunFeedback(run, scores, tuple(sorted({s.source_id for s in given}))))
    return _Found(found, problems, dict(sorted(left_out.items())))


def _unlisted(
    run: CellRun, info: TraceInfo, humans: frozenset[str], taken: dict[str, CandidateScores]
) -> list[GivenScore]:
    """The latest feedback of sources not on the list that differs from what the human tier
    takes now (`taken`) or holds: what taking it would have changed."""
    stored = run.scores("human")

    def decided(score: GivenScore) -> object:
        cid = score.candidate or ""
        if cid in taken:
            return getattr(taken[cid], score.name)
        return stored[cid].as_dict().get(score.name) if cid in stored else None

    return [
        score
        for score in human_feedback(info, run.candidate_count)
        if score.source_id not in humans and decided(score) != _number(score.value)
    ]


def _trace_infos(store: TrackingStore, experiment_id: str) -> Iterator[TraceInfo]:
    token = None
    while True:
        try:
            page = store.client.search_traces(
                locations=[experiment_id],
                filter_string=f"tags.`{KIND_TAG}` = '{KIND_CELL}'",
                include_spans=False,
                max_results=_PAGE,
                page_token=token,
            )
        except Exception as exc:
            raise TrackingError(
                f"cannot search traces at {store.shown_uri}: {short_error(exc)}"
            ) from None
        yield from (trace.info for trace in page)
        token = page.token
        if not token:
            return


def _problem(run: CellRun, score: GivenScore) -> str | None:
    """What is wrong with one given score, as a judge file's problem would say it."""
    where = f"run {run.label} ({run.trace_id}): {score.name} by {score.source_id or 'someone'}"
    if score.candidate is None:
        return f"{where}: given on the trace, not on a candidate's span (c1…c{run.candidate_count})"
    try:
        CandidateScores.model_validate({score.name: _number(score.value)})
    except ValidationError as exc:
        message = exc.errors()[0]["msg"]
        return f"{where} on {score.candidate}: {score.value!r}: {message}"
    return None


def _number(value: object) -> object:
    """A whole number as an int: MLflow's API returns numeric feedback as a float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _completed(
    run: CellRun, info: TraceInfo, given: list[GivenScore]
) -> dict[str, CandidateScores]:
    """Per candidate with feedback, its scores: the feedback over the run's stored human
    scores, else its draft, else the rules' flags; only if that changes anything."""
    from mlflow.entities import Feedback

    stored, draft = run.scores("human"), run.draft()
    rules: dict[str, dict[str, object]] = {}  # the rules' flags, logged with the trace
    for assessment in info.assessments:
        cid = (assessment.metadata or {}).get(CANDIDATE_KEY)
        if isinstance(assessment, Feedback) and assessment.source.source_type == CODE and cid:
            rules.setdefault(cid, {})[assessment.name] = _number(assessment.value)
    scores: dict[str, CandidateScores] = {}
    for cid in sorted({s.candidate for s in given if s.candidate}):
        if cid in stored:
            values: dict[str, object] = dict(stored[cid].as_dict())
        elif cid in draft:
            values = dict(zip(SCORE_NAMES, draft[cid], strict=True))
        else:
            values = dict(rules.get(cid, {}))
        before = dict(values)
        for score in given:
            if score.candidate == cid:
                values[score.name] = _number(score.value)
        if values != before:
            scores[cid] = CandidateScores.model_validate(values)
    return scores


def _item(feedback: _RunFeedback) -> Item:
    run = feedback.run
    return Item(
        run_id=run.run_id,
        scores_version=run.scores_version("human"),
        scenario={},
        candidates=[
            Candidate(id=cid, text="", scores=scores) for cid, scores in feedback.scores.items()
        ],
    )


def _add(total: ApplyResult, part: ApplyResult) -> None:
    """Add one group's result to the whole."""
    for item in fields(ApplyResult):
        mine, theirs = getattr(total, item.name), getattr(part, item.name)
        if isinstance(mine, int) and not isinstance(mine, bool):
            setattr(total, item.name, mine + theirs)
        elif isinstance(mine, list):
            mine.extend(theirs)
        elif isinstance(mine, dict):
            mine.update(theirs)
        elif isinstance(mine, bool):
            setattr(total, item.name, mine or theirs)
