"""What an optimization will cost, said before it spends anything, and what its gate can see.

The budget counts evaluations: one prompt version on one training scenario, as GEPA counts
its metric calls. The start costs one per training scenario; an iteration at most
`iteration_ceiling` (a parent and its proposal on the minibatch, the proposal on every
training scenario if it is accepted), and one starts only if that fits in what is left. An
evaluation already made (the same version on the same scenario) is read back from the
store, not generated again, yet GEPA counts it: 40 evaluations may make 14 cell runs.

Time is estimated from a speed measured on this machine, never guessed: each optimization
records its wall seconds per evaluation (`SPEED_METRIC`: generation, judging, reflection and
writing, all in), and the next one with the same task model, judge and tips per cell reads
it back. Without one, the estimate says so, and the first iteration's line shows it.

The held-out grid's cost is its cells: the start and the shortlist on every held-out
scenario, each collected and judged like an evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tipbench._words import counted
from tipbench.human_tier import DetectableGap
from tipbench.optimize._config import OptimizeConfig
from tipbench.optimize._record import KIND_OPTIMIZATION, SPEED_METRIC
from tipbench.optimize._split import Split
from tipbench.tracking import KIND_TAG, TrackingStore


@dataclass(frozen=True)
class Speed:
    """Seconds per evaluation, and the optimization that measured them."""

    seconds: float
    measured_by: str  # the optimization's run name


@dataclass(frozen=True)
class Cost:
    """An optimization's cost in evaluations and held-out cells, and in time if measured."""

    budget: int
    spent: int  # already, when it resumes
    n_training: int
    minibatch: int  # as used: at most the training scenarios
    per_iteration: int
    heldout_cells: int  # at most: the start and a full shortlist (0 with --no-heldout)
    speed: Speed | None
    detectable: str  # what the held-out gate can detect (`detectable_gap_text`)

    def lines(self) -> list[str]:
        """What the CLI prints before the first evaluation."""
        whole = " (the whole training set)" if self.minibatch == self.n_training else ""
        left = self.budget - self.spent
        lines = [
            f"cost: at most {left} evaluations of {self.budget}"
            + (f" ({self.spent} spent before)" if self.spent else "")
            + f": the start on {counted(self.n_training, 'training scenario')}, then "
            f"iterations of at most {self.per_iteration} (a parent and its proposal on a "
            f"minibatch of {self.minibatch}{whole}, the proposal on every training scenario "
            "if accepted)",
        ]
        if self.heldout_cells:
            lines.append(
                f"then the held-out grid: at most {counted(self.heldout_cells, 'cell')}, each "
                "collected and judged"
            )
        lines.append(self.time_line(left))
        lines.append(self.detectable)
        return lines

    def time_line(self, evaluations: int) -> str:
        if self.speed is None:
            return (
                "time: not measured yet for these models on this machine (each iteration's "
                "line shows the time per evaluation)"
            )
        seconds = self.speed.seconds
        line = (
            f"time: about {_duration(evaluations * seconds)} at {seconds:.1f} s per evaluation "
            f"(measured by {self.speed.measured_by}, the same models)"
        )
        if self.heldout_cells:
            line += f", up to {_duration(self.heldout_cells * seconds)} more for the held-out grid"
        return line


def estimate(
    config: OptimizeConfig, split: Split, per_iteration: int, spent: int, speed: Speed | None
) -> Cost:
    """The cost of running `config` on `split` (`spent`: already, by this optimization)."""
    heldout = (1 + config.shortlist) * len(split.heldout) if config.heldout else 0
    return Cost(
        config.budget,
        spent,
        len(split.training),
        min(config.minibatch, len(split.training)),
        per_iteration,
        heldout,
        speed,
        detectable_gap_text(split.heldout, 1 + config.shortlist),
    )


def measured_speed(store: TrackingStore, config: OptimizeConfig) -> Speed | None:
    """The latest speed recorded by an optimization of the same task model, judge and tips
    per cell in the training experiment, if any (nothing is created)."""
    experiment_id = store.find_experiment(config.experiment)
    if experiment_id is None:
        return None
    same = {"model": config.model, "judge_model": config.judge_model, "n_tips": str(config.n_tips)}
    for run in store.find(experiment_id, {KIND_TAG: KIND_OPTIMIZATION}, same):
        seconds = run.metrics.get(SPEED_METRIC)
        if seconds:
            return Speed(seconds, run.name)
    return None


def detectable_gap_text(heldout: Sequence[str], cells: int) -> str:
    """What the held-out gate can detect on these scenarios among `cells` cells (the start
    and the shortlist), with every run judged by people (`judging.DetectableGap`)."""
    return f"held-out gate: {DetectableGap.assumed(len(heldout), cells).describe()}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
