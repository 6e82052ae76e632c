"""Held-out or it does not count: the shortlist and the start on scenarios never trained on.

`tipbench run`'s phases (collect → automatic judge → export for the human judge → compare)
run the start version and the shortlist on the held-out scenarios, into an experiment of
their own (`EXPERIMENT-heldout`), with the judge on its own server: the existing gate
(`tipbench.promote`, human or combined tier) then decides there, and only there, whether a
proposal replaces production. Right after the grid it is asked for a dry run, which says
what is missing (human scores, as a rule); `tipbench promote --experiment
EXPERIMENT-heldout --apply` acts once people have judged the held-out cells.

The gate counts every scenario of the experiment it is asked about, so that experiment must
hold held-out scenarios only: it must not be the training experiment, nor hold an
optimization's training evaluations or a cell of this split's training scenarios (from
another split, say). `check_heldout_experiment` refuses it before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench.auto_judge import AutoJudgeConfig, AutoJudgeProgress, auto_judge
from tipbench.collect import CollectProgress, collect
from tipbench.human_tier import previous_judge_file
from tipbench.optimize._config import OptimizeConfig
from tipbench.optimize._record import KIND_OPTIMIZATION
from tipbench.optimize._split import Split
from tipbench.pipeline import PipelineResult, default_export_path, export_in_order, rank
from tipbench.promote import PromotionResult, promote
from tipbench.tracking import KIND_TAG, TrackingStore, experiment_is_new


@dataclass(frozen=True)
class HeldOut:
    """The held-out grid's pipeline run and the gate's dry-run decision on it."""

    experiment: str
    prompts: tuple[str, ...]  # the start, then the shortlist
    pipeline: PipelineResult
    gate: PromotionResult

    @property
    def export_path(self) -> Path:
        return self.pipeline.export.path


def run_heldout(
    config: OptimizeConfig,
    split: Split,
    start: str,
    shortlist: Sequence[str],
    *,
    tracking_uri: str,
    suite: Path,
    collect_progress: CollectProgress | None = None,
    judge_progress: AutoJudgeProgress | None = None,
) -> HeldOut:
    """Run the start and the shortlist on the held-out scenarios, then ask the gate (a dry
    run, recorded in the held-out experiment).

    Raises:
        TipbenchError: the store, the models or the suite cannot be used.
    """
    experiment = config.heldout_name
    prompts = (start, *shortlist)
    grid = config.grid(list(prompts), list(split.heldout), experiment).model_copy(
        update={"suite": str(suite)}
    )
    export_path = default_export_path(experiment)
    previous_judge_file(export_path, experiment)  # refuse early, not after the work
    collected = collect(grid, tracking_uri=tracking_uri, progress=collect_progress)
    store = TrackingStore(collected.tracking_uri)
    settings = config.phase_settings("judge") | {"experiment": experiment, "suite": str(suite)}
    judge = AutoJudgeConfig(judge_model=config.judge_model, **settings)
    judged = auto_judge(store, judge, progress=judge_progress)
    exported = export_in_order(store, experiment, export_path)
    ranking = rank(store, experiment, suite=str(suite))
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
    gate = promote(store, experiment, record=True, suite=str(suite))
    return HeldOut(experiment, prompts, result, gate)


def check_heldout_experiment(
    tracking_uri: str | None, config: OptimizeConfig, split: Split
) -> None:
    """Refuse a held-out experiment that holds more than held-out scenarios (see the
    module's doc); a store or an experiment that does not exist yet is left as it is.

    Raises:
        ConfigError: it holds an optimization's training runs or a training scenario's cell.
    """
    name = config.heldout_name
    if experiment_is_new(tracking_uri, name):
        return
    store = TrackingStore(tracking_uri)
    experiment_id = store.find_experiment(name)
    if experiment_id is None:
        return
    why = "the gate there counts every scenario of the experiment: name another one"
    if store.find(experiment_id, {KIND_TAG: KIND_OPTIMIZATION}):
        raise ConfigError(
            f"--heldout-experiment {name} holds an optimization's training evaluations: {why}"
        )
    trained = sorted(
        {run.scenario_id for run in store.cell_runs(experiment_id)} & set(split.training)
    )
    if trained:
        raise ConfigError(
            f"--heldout-experiment {name} holds cells of training scenarios "
            f"({', '.join(trained)}): {why}"
        )
