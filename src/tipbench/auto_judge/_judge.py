"""The automatic judge tier: an LLM on any backend scores every candidate against the rubric.

One judge model is loaded once (after the size guard), scores each candidate of each run
still without automatic scores at temperature 0 with schema-constrained JSON, and is
unloaded at the end, on error and on Ctrl-C. A run's scores are written (off the hot path)
only when all its candidates are scored; a run whose judging fails gets the error as its
`auto_judge_error` tag and is retried by the next run of the judge. Human scores are never
touched: the automatic tier has its own metrics and tags (see `tipbench.tracking._scores`).

The rules own `format_ok` and `overlong`: the tier records the flags collect's rules gave
each candidate. Under the score schema the judge's answer ends after the criteria
(`_auto_prompt.score_schema`); a judge that answers the flags anyway (free or JSON mode)
has them kept in `auto_answers.json` and the `auto_judge_flags` tag. Only a human judge
overrides a rule's flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import field_validator

from tipbench._errors import BackendError, ConfigError, TrackingError, UnusableOutput
from tipbench._phase import PhaseConfig, PhaseResult, SilentProgress
from tipbench.auto_judge._flags import constant_score_warnings
from tipbench.auto_judge._prompt import JudgeAnswer, judge_messages, parse_scores
from tipbench.auto_judge._requests import (
    JUDGE_SEED,
    JUDGE_TEMPERATURE,
    RESAMPLE_TEMPERATURE,
    judge_request,
    judging_order,
    warm_up_request,
)
from tipbench.auto_judge._verdict import RawAnswer, Verdict, write_error, write_scores
from tipbench.backends import (
    DEFAULT_STRUCTURED,
    Backend,
    BackendOptions,
    Constraint,
    GenerationRequest,
    ModelSpec,
    RetryPolicy,
    StructuredMode,
    call_with_retries,
    generate_structured,
    open_checked,
    resident,
)
from tipbench.suite import Rubric, load_suite
from tipbench.tracking import (
    BackgroundWriter,
    CellCandidates,
    CellRun,
    RecordedCandidate,
    Scores,
    TrackingStore,
    data_dir,
    fetch_candidates,
    mark_updated,
    short_error,
)

if TYPE_CHECKING:
    pass

DEFAULT_JUDGE_MODEL = "llamacpp:smollm2-135m"
#: The rubric alone is ~1,600 tokens.
JUDGE_N_CTX = 4096
#: The folder in `TIPBENCH_HOME` where an embedded judge keeps its evaluated rubric.
WARM_DIR = "warmed"


def judge_options(options: BackendOptions) -> BackendOptions:
    """`options` as the judge's model takes them: its context, and where an embedded judge
    keeps its evaluated rubric for the next process (`backends/_warmed.py`)."""
    return replace(options, n_ctx=JUDGE_N_CTX, warm_dir=data_dir() / WARM_DIR)


class AutoJudgeProgress(Protocol):
    """Receives progress per candidate (the CLI draws a bar from it)."""

    def begin(self, total: int, done: int) -> None: ...
    def start(self, label: str) -> None: ...  # a candidate is being judged now
    def advance(self, label: str, error: str | None = None, count: int = 1) -> None: ...
    def note(self, message: str) -> None: ...
    def loading(self, model: str, loading: bool) -> None: ...  # the judge model loads, or is ready


class AutoJudgeConfig(PhaseConfig):
    """A pass of the automatic judge (the keys every phase shares, as for collect).

    Validated the same way from the CLI, the API and the DAG.
    """

    judge_model: str = DEFAULT_JUDGE_MODEL
    rejudge: bool = False  # judge runs that already have automatic scores again (a new version)

    @field_validator("judge_model")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        try:
            return ModelSpec.parse(value).with_declared_size()  # the size guard needs it
        except ConfigError as exc:
            raise ValueError(str(exc)) from None


@dataclass
class AutoJudgeResult(PhaseResult):
    """What a judging pass did; `exit_code` is 0 only if every pending run was judged.

    `failed` and `unwritten` name runs.
    """

    experiment: str
    tracking_uri: str
    judge_model: str
    total: int  # judgeable runs
    skipped: int = 0  # already auto-judged
    judged: int = 0
    candidates: int = 0  # candidates scored in this pass
    model_loads: int = 0
    warnings: list[str] = field(default_factory=list)  # e.g. constant scores


def auto_judge(
    store: TrackingStore,
    config: AutoJudgeConfig,
    *,
    retry: RetryPolicy | None = None,
    progress: AutoJudgeProgress | None = None,
) -> AutoJudgeResult:
    """Score every candidate of the experiment's runs that have no automatic scores yet.

    Args:
        store: The MLflow store the experiment lives in.
        config: The experiment, the judge model (the size guard applies as for collect),
            the servers, the suite whose rubric the runs were collected under, `rejudge`.
        retry: Retries of transient failures and unparsable answers, per candidate.
        progress: Receives progress per candidate.

    Raises:
        TipbenchError: for bad input (experiment, model, size, a run collected under another
            rubric) before the judge model is loaded, or when the store cannot be used.
        BackendError: the judge model could not be loaded, after retries (nothing written).
    """
    progress = progress or SilentProgress()
    retry = retry or RetryPolicy()
    experiment = config.experiment
    spec = ModelSpec.parse(config.judge_model)
    experiment_id = store.experiment_id(experiment)
    runs = store.cell_runs(experiment_id, judgeable=True)
    pending = judging_order(run for run in runs if config.rejudge or not run.judged_by("auto"))
    rubric = _rubric_for(pending, config.suite)
    backend = open_checked(
        spec,
        judge_options(config.backend_options()),
        config.max_model_b,
        config.allow_unknown_size,
    ).backend

    result = AutoJudgeResult(experiment, store.uri, str(spec), len(runs), len(runs) - len(pending))
    waiting = {run.run_id for run in pending}
    progress.begin(
        sum(run.candidate_count for run in runs),
        sum(run.candidate_count for run in runs if run.run_id not in waiting),
    )
    if not pending:
        return result
    progress.note(f"downloading the candidates of {len(pending)} runs")
    try:
        cells = fetch_candidates(store, pending)
    except Exception as exc:
        raise TrackingError(
            f"cannot read candidates at {store.shown_uri}: {short_error(exc)}"
        ) from None

    judge = CandidateJudge(backend, rubric.text(), retry, progress, config.structured)
    writer = BackgroundWriter(store)
    try:
        progress.loading(str(spec), True)
        with resident(backend, retry, progress.note):
            result.model_loads += 1
            judge.warm()
            progress.loading(str(spec), False)
            for run, cell in zip(pending, cells, strict=True):
                name = run.label
                verdict = judge.cell(name, cell)
                if verdict.error is not None:
                    result.failed.append((name, verdict.error))
                    writer.submit(name, write_error(run.run_id, verdict.error, str(spec), verdict))
                else:
                    result.judged += 1
                    result.candidates += len(verdict.scores)
                    writer.submit(name, write_scores(run, verdict, str(spec), judge.mode))
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    finally:
        progress.note("writing the last scores to MLflow")
        result.unwritten = [(f.label, f.error) for f in writer.close()]
    if result.judged:
        mark_updated(store, experiment_id)  # the panel's "Last update" counts scores
    result.warnings = constant_score_warnings(store.cell_runs(experiment_id, judgeable=True))
    return result


def _rubric_for(runs: list[CellRun], suite: str | Path | None) -> Rubric:
    """The suite's rubric, if it is the one every run was collected under.

    Raises:
        ConfigError: a run names another rubric (the judge would score against the wrong one).
    """
    loaded = load_suite(suite)
    for run in runs:
        wanted = run.rubric
        if wanted != loaded.rubric.id:
            raise ConfigError(
                f"run {run.label} was collected under rubric "
                f"{wanted!r}, but suite {loaded.label} has rubric {loaded.rubric.id!r}: "
                "pass --suite with the suite that has it"
            )
    return loaded.rubric


def judge_mode(structured: StructuredMode) -> StructuredMode:
    """The mode the judge's requests are made in: `auto` is the score schema.

    Unlike a list of tips, the judge's answer is a handful of small integers: its grammar
    is a short enum that costs little per answer, while the embedded judge's free answers
    almost never parse (it repeats keys until the token limit; see bench/README.md). A
    free first try would only add its tokens to every candidate.
    """
    return "schema" if structured == "auto" else structured


@dataclass
class CandidateJudge:
    backend: Backend
    rubric_text: str
    retry: RetryPolicy
    progress: AutoJudgeProgress
    structured: StructuredMode = DEFAULT_STRUCTURED

    @property
    def mode(self) -> StructuredMode:
        return judge_mode(self.structured)

    def warm(self) -> None:
        """Evaluate the rubric every request starts with, once, right after the load (where
        the backend keeps a prefix cache): the first candidate then costs what the others do."""
        self.backend.warm(warm_up_request(self.rubric_text))

    def cell(self, name: str, cell: CellCandidates) -> Verdict:
        """Score a run's candidates one by one; stop at the first that cannot be scored."""
        if not cell.candidates:
            return Verdict(error="the run has no candidates")
        scores: dict[str, Scores] = {}
        resampled: dict[str, tuple[float, int]] = {}
        answers: dict[str, list[RawAnswer]] = {}
        own_flags: dict[str, tuple[int, int]] = {}
        for index, candidate in enumerate(cell.candidates):
            cid = candidate.id
            answers[cid] = []
            self.progress.start(f"{name} {cid}")
            try:
                answer, (temperature, seed) = self._score(cell, candidate, answers[cid])
            except BackendError as exc:
                error = f"candidate {cid}: {exc}"
                self.progress.advance(f"{name} {cid}", error, len(cell.candidates) - index)
                return Verdict(error=error, answers=answers)
            scores[cid] = answer.with_flags(candidate.format_ok, candidate.overlong)
            if answer.own_flags is not None:
                own_flags[cid] = answer.own_flags
            if temperature != JUDGE_TEMPERATURE:
                resampled[cid] = (temperature, seed)
            self.progress.advance(f"{name} {cid}")
        threads = self.backend.threads.threads if self.backend.threads else None
        return Verdict(scores, resampled, None, answers, own_flags, threads)

    def _score(
        self, cell: CellCandidates, candidate: RecordedCandidate, answers: list[RawAnswer]
    ) -> tuple[JudgeAnswer, tuple[float, int]]:
        """One candidate's answer and the (temperature, seed) that gave it, with retries.

        Every answer the model gave, parsable or not, is appended to `answers`.
        """
        messages = judge_messages(self.rubric_text, cell.scenario, candidate.model_dump())
        temperature = JUDGE_TEMPERATURE

        def attempt(number: int) -> tuple[JudgeAnswer, tuple[float, int]]:
            nonlocal temperature
            seed = JUDGE_SEED + number - 1

            def request_for(constraint: Constraint) -> GenerationRequest:
                return judge_request(messages, constraint, temperature, seed)

            answer = generate_structured(
                self.backend, self.mode, request_for, parse_scores, lambda s: s is not None
            )
            text, scores = answer.generation.text, answer.parsed
            answers.append(RawAnswer(text, temperature, seed))
            if scores is None:
                temperature = RESAMPLE_TEMPERATURE
                raise UnusableOutput(f"unparsable judge output: {text[:120]!r}")
            return scores, (answers[-1].temperature, seed)

        return call_with_retries(attempt, self.retry)[0]
