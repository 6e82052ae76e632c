"""`tipbench optimize`: propose prompt versions with GEPA on training scenarios, shortlist
them, and judge the shortlist on held-out scenarios for the gate.

Every input is checked before anything is written: the start version, the split (some
scenarios held out), a budget of at least one iteration, and every model's size. The
optimization is named by what defines it (start, models, split, seed, settings; not the
budget): the same command resumes it after Ctrl-C from its last finished iteration (GEPA's
state in `$TIPBENCH_HOME/optimize/ID`, the evaluations already made read back from the
store), and a larger `--budget` continues it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from tipbench._errors import BackendError, ConfigError
from tipbench._words import counted
from tipbench.auto_judge import AutoJudgeProgress
from tipbench.backends import Backend, RetryPolicy, open_checked
from tipbench.collect import CollectProgress
from tipbench.optimize._adapter import Proposer, TipbenchAdapter
from tipbench.optimize._config import ModelRole, OptimizeConfig
from tipbench.optimize._cost import Cost, estimate, measured_speed
from tipbench.optimize._engine import Events, iteration_ceiling, run_gepa
from tipbench.optimize._evaluation import Evaluator
from tipbench.optimize._heldout import HeldOut, check_heldout_experiment, run_heldout
from tipbench.optimize._lineage import Lineage, Skipped
from tipbench.optimize._record import OptimizationRecord
from tipbench.optimize._reflect import Reflector
from tipbench.optimize._split import Split, split_scenarios
from tipbench.optimize._summary import IterationSummary, Program, shortlist
from tipbench.optimize._view import LineageRow, lineage_document, lineage_rows
from tipbench.suite import (
    PromptVersion,
    Suite,
    bundled_suite_path,
    content_hash,
    load_suite,
    working_copy_path,
)
from tipbench.tracking import (
    DEFAULT_PROMPT_NAME,
    RegisteredPrompt,
    TrackingStore,
    data_dir,
    register_proposal,
    registered_version,
    tag_training_scores,
)

#: The reflection prompt holds the template and the feedback: more than collect's context.
REFLECTION_N_CTX = 4096


class OptimizeProgress(Protocol):
    """Receives an optimization's progress (the CLI draws a bar over the budget from it)."""

    def begin(self, total: int, done: int) -> None: ...
    def advance(self, label: str, error: str | None = None, count: int = 1) -> None: ...
    def note(self, message: str) -> None: ...
    def iteration(self, summary: IterationSummary) -> None: ...
    def proposed(self, prompt: PromptVersion) -> None: ...
    def skipped(self, skipped: Skipped) -> None: ...
    def planned(self, cost: Cost) -> None: ...  # before the first evaluation


@dataclass
class OptimizationResult:
    """What an optimization did, where its versions are, and what the gate said."""

    optimization: str
    run_id: str
    suite: Path
    split: Split
    start: str
    summaries: list[IterationSummary]
    proposals: list[PromptVersion]
    skipped: list[Skipped]
    shortlist: list[Program]
    lineage: list[LineageRow]  # every version as a tree, each proposal with its diff
    budget: int  # the ceiling: `final.evaluations` never passes it
    per_iteration: int  # the most an iteration spends: it starts only if that fits
    heldout: HeldOut | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def final(self) -> IterationSummary:
        return self.summaries[-1]

    def spent(self) -> str:
        """`14 of 16 evaluations spent (…)`: the budget is a ceiling, and why it stopped."""
        spent, left = self.final.evaluations, self.budget - self.final.evaluations
        line = f"{spent} of {self.budget} evaluations spent"
        if left > 0:
            line += (
                f" (an iteration can spend {self.per_iteration}: the {left} left would not "
                "cover one)"
            )
        return line


def iteration_cost(n_training: int, minibatch: int) -> int:
    """The evaluations of a first iteration: the start on every training scenario, a parent
    and its proposal on a minibatch, and the proposal on every scenario if accepted."""
    return n_training + iteration_ceiling(n_training, minibatch)


def working_suite(suite: str | None) -> Path:
    """The suite folder proposals are written into: `--suite`, else tipbench's copy of the
    bundled suite, `$TIPBENCH_HOME/suites/tips` (made by `copy_bundled_suite` once the
    input is checked; the package's own files stay as shipped).

    Raises:
        ConfigError: the folder is not a writable suite folder, or is the bundled one.
    """
    if suite is None:
        return working_copy_path(data_dir())
    folder = Path(suite)
    if not (folder / "prompts").is_dir():
        raise ConfigError(f"{folder}: not a suite folder (no prompts/)")
    if folder.resolve() == bundled_suite_path().resolve():
        raise ConfigError(
            f"{folder} is the bundled suite: proposals are written into a suite folder, "
            "so pass a copy of it with --suite (or none, for tipbench's own copy)"
        )
    if not os.access(folder / "prompts", os.W_OK):
        raise ConfigError(f"{folder / 'prompts'} cannot be written: proposals go there")
    return folder


def copy_bundled_suite(folder: Path) -> None:
    """Make `folder` a copy of the bundled suite, whole or not at all (copied beside it,
    then renamed), unless it exists."""
    if folder.exists():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        shutil.copytree(bundled_suite_path(), partial, dirs_exist_ok=True)
        partial.rename(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def optimization_id(config: OptimizeConfig, suite: Suite, split: Split) -> str:
    """The name of an optimization: what defines it, hashed (not its budget)."""
    start = suite.prompt(config.from_version)
    return content_hash(
        {
            "suite": suite.label,
            "start": [start.version, start.template_hash],
            "models": [config.model, config.judge_model, config.reflection_model],
            "training": list(split.training),
            "seed": config.seed,
            "minibatch": config.minibatch,
            "settings": [config.n_tips, config.temperature, config.structured],
            "experiment": config.experiment,
        }
    )[:12]


@dataclass(frozen=True)
class Prepared:
    """An optimization's input, checked: where proposals go, the suite, the start version,
    the split, the reflection model's backend (its size checked, nothing loaded)."""

    folder: Path
    suite: Suite
    start: PromptVersion
    split: Split
    reflection: Backend


def prepare(config: OptimizeConfig, tracking_uri: str | None = None) -> Prepared:
    """Check everything an optimization needs, writing nothing: the suite folder, the start
    version, the split, the budget, the held-out experiment (in the store at
    `tracking_uri`) and every model's size.

    Raises:
        TipbenchError: the first problem, in one line.
    """
    folder = working_suite(config.suite)
    suite = load_suite(folder if folder.exists() else bundled_suite_path())
    start = suite.prompt(config.from_version)
    split = split_scenarios(suite.scenarios, config.seed, config.train_count, config.train_ids)
    _check_budget(config, split)
    reflection = _preflight(config)
    if config.heldout:
        check_heldout_experiment(tracking_uri, config, split)
    return Prepared(folder, suite, start, split, reflection)


def optimize(
    config: OptimizeConfig,
    *,
    tracking_uri: str | None = None,
    progress: OptimizeProgress,
    collect_progress: CollectProgress | None = None,
    judge_progress: AutoJudgeProgress | None = None,
) -> OptimizationResult:
    """Propose, shortlist, and (unless `config.heldout` is off) judge the shortlist on the
    held-out scenarios with the gate's dry run. Re-running the same call resumes.

    Raises:
        TipbenchError: bad input, checked before anything is written (see the module's doc),
            or a store, model or suite that cannot be used.
    """
    prepared = prepare(config, tracking_uri)
    folder, suite, start, split = prepared.folder, prepared.suite, prepared.start, prepared.split
    copy_bundled_suite(folder)  # nothing is written before this line
    config = config.model_copy(update={"suite": str(folder)})
    store = TrackingStore(tracking_uri)
    key = optimization_id(config, suite, split)
    experiment_id = store.experiment_id(config.experiment, create=True)
    title = f"optimize {start.version} ({key})"
    params = _params(config, split)
    record = OptimizationRecord.open(store, experiment_id, key, title, params, config.budget)
    registry = _Registry(store)
    lineage = Lineage(folder, key, start, registry.register, registry.tag_scores)
    evaluator = Evaluator(
        config, store, experiment_id, record.child_tags(), _cell_note(progress), progress.note
    )
    training = [suite.scenario(sid) for sid in split.training]
    reflector = Reflector(prepared.reflection, RetryPolicy(), config.seed, progress.note, training)
    proposer = Proposer(reflector, lineage, progress.proposed, progress.skipped)
    adapter = TipbenchAdapter(evaluator, lineage, proposer)
    per_iteration = iteration_ceiling(len(split.training), config.minibatch)
    progress.planned(
        estimate(config, split, per_iteration, record.spent, measured_speed(store, config))
    )
    reporter = _Reporter(config, record, lineage, progress)
    events = Events(
        split.training,
        adapter,
        on_begin=lambda done: progress.begin(config.budget, done),
        on_spent=lambda i, count: progress.advance(f"iteration {i}", count=count),
        on_iteration=reporter.iteration,
    )
    run_dir = data_dir() / "optimize" / key
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        run_gepa(
            adapter,
            training,
            budget=config.budget,
            minibatch=config.minibatch,
            seed=config.seed,
            run_dir=str(run_dir),
            events=events,
        )
    except BaseException as exc:  # Ctrl-C: KILLED, resumable; an error: FAILED
        record.close("FAILED" if isinstance(exc, Exception) else "KILLED")
        raise
    final = events.summaries[-1]
    chosen = shortlist(final, start.version, config.shortlist)
    reporter.write_lineage(final, chosen)
    record.finish(chosen, config.heldout_name, title, events.summaries[0].programs[0].mean)
    rows = lineage_rows(start, lineage.proposals, final, [p.version for p in chosen])
    result = OptimizationResult(
        key,
        record.run_id,
        folder,
        split,
        start.version,
        events.summaries,
        lineage.proposals,
        lineage.skipped,
        chosen,
        rows,
        config.budget,
        per_iteration,
    )
    if warning := split.gate_warning():
        result.warnings.append(warning)
    if config.heldout and chosen:
        progress.note(f"held-out grid: {start.version} and the shortlist")
        result.heldout = run_heldout(
            config,
            split,
            start.version,
            [p.version for p in chosen],
            tracking_uri=store.uri,
            suite=folder,
            collect_progress=collect_progress,
            judge_progress=judge_progress,
        )
    return result


def _check_budget(config: OptimizeConfig, split: Split) -> None:
    need = iteration_cost(len(split.training), config.minibatch)
    if config.budget < need:
        raise ConfigError(
            f"--budget {config.budget} is below one iteration: {need} evaluations (the start "
            f"and an accepted proposal each on {counted(len(split.training), 'training scenario')},"
            f" a parent and its proposal on a minibatch of "
            f"{min(config.minibatch, len(split.training))})"
        )


def _preflight(config: OptimizeConfig) -> Backend:
    """Apply the size guard to every model, on its own server, before anything is written;
    return the reflection model's backend (collect and the judge check theirs again when
    they run)."""
    _checked(config, "model")
    _checked(config, "judge")
    return _checked(config, "reflection", n_ctx=REFLECTION_N_CTX)


def _checked(config: OptimizeConfig, role: ModelRole, **overrides: int) -> Backend:
    """The backend of one of the models, checked; its errors name the option."""
    option = "--model" if role == "model" else f"--{role}-model"
    try:
        return open_checked(
            config.spec(role),
            config.options(role, **overrides),
            config.max_model_b,
            config.allow_unknown_size,
        ).backend
    except BackendError as exc:
        raise type(exc)(f"{option}: {exc}") from exc


def _params(config: OptimizeConfig, split: Split) -> dict[str, str]:
    return {
        "from_version": config.from_version,
        "model": config.model,
        "judge_model": config.judge_model,
        "reflection_model": config.reflection_model,
        "budget": str(config.budget),
        "seed": str(config.seed),
        "minibatch": str(config.minibatch),
        "shortlist": str(config.shortlist),
        "n_tips": str(config.n_tips),
        "temperature": str(config.temperature),
        "training_scenarios": ",".join(split.training),
        "heldout_scenarios": ",".join(split.heldout),
        "split": split.how,
    }


@dataclass(frozen=True)
class _Registry:
    """Each proposal in the Prompt Registry, with its lineage and training scores."""

    store: TrackingStore

    def register(self, prompt: PromptVersion, parent: PromptVersion) -> None:
        register_proposal(self.store.client, DEFAULT_PROMPT_NAME, prompt, parent)

    def tag_scores(self, prompt: PromptVersion) -> None:
        client, proposal = self.store.client, prompt.proposal
        version = registered_version(client, DEFAULT_PROMPT_NAME, prompt.template_hash)
        if version is not None and proposal is not None:
            registered = RegisteredPrompt(DEFAULT_PROMPT_NAME, version)
            tag_training_scores(client, registered, proposal.training_scores)


def _cell_note(progress: OptimizeProgress) -> Callable[[str, str | None], None]:
    def made(name: str, error: str | None) -> None:
        progress.note(f"{name}: {'failed: ' + error if error else 'collected'}")

    return made


@dataclass
class _Reporter:
    """Each finished iteration: recorded in MLflow (once), with the seconds per evaluation
    this process has taken so far, then shown."""

    config: OptimizeConfig
    record: OptimizationRecord
    lineage: Lineage
    progress: OptimizeProgress
    started: float = field(default_factory=time.monotonic)

    def iteration(self, summary: IterationSummary) -> None:
        spent_here = summary.evaluations - self.record.spent
        if spent_here > 0:
            seconds = (time.monotonic() - self.started) / spent_here
            summary = replace(summary, seconds_per_evaluation=seconds)
        if self.record.iteration(summary, summary.seconds_per_evaluation):
            self.lineage_of(summary)
        self.progress.iteration(summary)

    def lineage_of(self, summary: IterationSummary) -> None:
        start = self.lineage.start.version
        self.write_lineage(summary, shortlist(summary, start, self.config.shortlist))

    def write_lineage(self, summary: IterationSummary, chosen: Sequence[Program]) -> None:
        document = lineage_document(
            self.lineage.start,
            self.lineage.proposals,
            self.lineage.skipped,
            summary,
            [p.version for p in chosen],
        )
        self.record.lineage(document)
