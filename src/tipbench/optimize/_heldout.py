"""Held-out or it does not count: the shortlist and the start on scenarios never trained on.

The normal pipeline (`tipbench run`: collect → automatic judge → export for the human judge
→ compare) runs the start version and the shortlist on the held-out scenarios, into an
experiment of their own (`EXPERIMENT-heldout`), so that the gate sees no training cell: the
existing gate (`tipbench.promote`, human or combined tier) then decides there, and only
there, whether a proposal replaces production. Right after the grid it is asked for a dry
run, which says what is missing (human scores, as a rule); `tipbench promote --experiment
EXPERIMENT-heldout --apply` acts once people have judged the held-out cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tipbench.collect import CollectProgress
from tipbench.judge import AutoJudgeProgress
from tipbench.optimize._config import OptimizeConfig
from tipbench.optimize._split import Split
from tipbench.pipeline import PipelineResult, default_export_path, run_pipeline
from tipbench.promote import PromotionResult, promote
from tipbench.tracking import TrackingStore


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
    result = run_pipeline(
        grid,
        tracking_uri=tracking_uri,
        judge_model=config.judge_model,
        export_path=default_export_path(experiment),
        collect_progress=collect_progress,
        judge_progress=judge_progress,
    )
    gate = promote(TrackingStore(tracking_uri), experiment, record=True, suite=str(suite))
    return HeldOut(experiment, prompts, result, gate)
