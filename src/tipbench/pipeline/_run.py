"""`tipbench run`: every phase in order, each resumable, on the same store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tipbench._errors import TrackingError
from tipbench._phase import PhaseConfig
from tipbench._progress_events import Phase
from tipbench.auto_judge import (
    DEFAULT_JUDGE_MODEL,
    AutoJudgeConfig,
    AutoJudgeProgress,
    AutoJudgeResult,
    JudgeCalibration,
    auto_judge,
)
from tipbench.collect import CollectConfig, CollectProgress, CollectResult, collect
from tipbench.compare import (
    BOARD_TIERS,
    DEFAULT_MIN_SCENARIOS,
    Leaderboard,
    leaderboards_for,
    log_leaderboard,
    plot_leaderboards,
)
from tipbench.human_tier import ExportResult, cannot_decide, previous_judge_file
from tipbench.pipeline._export import export_in_order
from tipbench.stats import ALPHA
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore, data_dir


def default_export_path(experiment: str) -> Path:
    """Where `run` writes the human judge's file unless told otherwise."""
    return data_dir() / "judge" / f"{experiment}.json"


@dataclass
class PipelineResult:
    """What each phase did; the exit code is the worst of them."""

    collect: CollectResult
    auto: AutoJudgeResult
    export: ExportResult
    boards: list[Leaderboard]
    leaderboard_run: str | None = None
    chart: Path | None = None
    warnings: list[str] = field(default_factory=list)
    judging: str = ""  # the judging order the file follows, and how the judging stands

    @property
    def calibration(self) -> tuple[JudgeCalibration, ...]:
        """Whether the automatic judge's scores count as evidence (one per judge model)."""
        return next((board.calibration for board in self.boards if board.tier == "auto"), ())

    @property
    def exit_code(self) -> int:
        return max(self.collect.exit_code, self.auto.exit_code)


def run_pipeline(
    config: CollectConfig,
    *,
    tracking_uri: str | None = None,
    judge_model: str = DEFAULT_JUDGE_MODEL,
    export_path: Path | None = None,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
    plot: Path | None = None,
    collect_progress: CollectProgress | None = None,
    judge_progress: AutoJudgeProgress | None = None,
    reveal: bool = False,
    on_phase: Callable[[Phase], None] | None = None,
) -> PipelineResult:
    """Collect the grid, judge it automatically, export it for the human, rank it.

    Every phase resumes where an earlier run stopped, so re-running the same call after a
    crash or Ctrl-C finishes the work without duplicates. Cells that failed are reported
    and left out of judging; the other phases still run.

    The human judge's file is blind unless `reveal`; scores already in it are carried over
    (a file that cannot be is refused before any work). `on_phase` hears each phase start.

    Raises:
        TipbenchError: bad input, or a store that cannot be used.
    """
    started = on_phase or (lambda phase: None)
    export_path = export_path or default_export_path(config.experiment)
    previous_judge_file(export_path, config.experiment)  # refuse early, not after the work
    started("collect")
    collected = collect(config, tracking_uri=tracking_uri, progress=collect_progress)
    store = TrackingStore(collected.tracking_uri)
    started("judge")
    judged = judge_grid(store, config, judge_model, progress=judge_progress)
    started("export")
    exported = export_in_order(store, config.experiment, export_path, reveal=reveal)
    started("compare")
    ranking = rank(
        store, config.experiment, min_scenarios=min_scenarios, plot=plot, suite=config.suite
    )
    result = PipelineResult(
        collected,
        judged,
        exported.result,
        ranking.boards,
        ranking.run_id,
        ranking.chart,
        judging=exported.describe(),
    )
    result.warnings.extend(ranking.warnings)
    never = never_promotes(config)
    if never is not None:
        result.warnings.append(never)
    return result


def never_promotes(config: CollectConfig) -> str | None:
    """What `run` says when its grid has too few scenarios for any promotion (the README's
    first command, `--n-scenarios 3`), and what to run instead; None when it has enough."""
    every = len(load_suite(config.suite).scenarios)
    n = min(config.n_scenarios, every) if config.n_scenarios else every
    too_few = cannot_decide(n, ALPHA)
    if too_few is None:
        return None
    instead = (
        f"tipbench run --n-scenarios 0 runs all {every} of the suite's scenarios"
        if cannot_decide(every, ALPHA) is None
        else "the suite needs more scenarios"
    )
    return f"this grid can never promote a prompt: {too_few} ({instead})"


def judge_grid(
    store: TrackingStore,
    config: CollectConfig,
    judge_model: str = DEFAULT_JUDGE_MODEL,
    *,
    progress: AutoJudgeProgress | None = None,
) -> AutoJudgeResult:
    """The automatic judge over a collected grid, on the grid's servers and size guard."""
    shared = config.model_dump(include=set(PhaseConfig.model_fields))
    return auto_judge(store, AutoJudgeConfig(judge_model=judge_model, **shared), progress=progress)


@dataclass(frozen=True)
class Ranking:
    """The leaderboards (both tiers, combined), and the MLflow run they were logged as."""

    boards: list[Leaderboard]
    run_id: str | None = None
    chart: Path | None = None  # the chart drawn, if one was asked for and could be saved
    warnings: tuple[str, ...] = ()  # what went wrong after ranking: the chart, logging

    @property
    def warning(self) -> str | None:
        """The warnings in one line; None if there are none."""
        return "; ".join(self.warnings) or None


def rank(
    store: TrackingStore,
    experiment: str,
    *,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
    plot: Path | None = None,
    suite: str | Path | None = None,
) -> Ranking:
    """Rank the experiment for both tiers and combined, and log the leaderboards with rows.

    Logging is best effort: the boards are returned even when the store refuses the run.
    The automatic tier's board carries its judges' calibration on `suite`'s calibration set.

    Raises:
        TrackingError: if the experiment cannot be read.
    """
    boards = leaderboards_for(store, experiment, BOARD_TIERS, min_scenarios, suite=suite)
    ranked = [board for board in boards if board.rows]
    if not ranked:
        return Ranking(boards)
    warnings: list[str] = []
    chart = None
    if plot is not None:
        try:
            plot.parent.mkdir(parents=True, exist_ok=True)
            chart = plot_leaderboards(ranked, plot)
        except OSError as exc:  # the work is done: a chart that cannot be saved is a warning
            warnings.append(f"chart not saved to {plot}: {exc.strerror or exc}")
    try:
        run_id = log_leaderboard(store, store.experiment_id(experiment), ranked, chart)
    except TrackingError as exc:
        warnings.append(f"leaderboard not logged: {exc}")
        return Ranking(boards, None, chart, tuple(warnings))
    return Ranking(boards, run_id, chart, tuple(warnings))
