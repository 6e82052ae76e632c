"""GEPA itself, run with tipbench's adapter, seeded choices, and its state in a folder.

`gepa.optimize` runs the loop (Agrawal et al. 2025, Algorithm 1): score the start on every
training scenario; then, until the budget of evaluations is spent, pick a parent from the
Pareto front, score it on a minibatch with feedback, let the reflection model rewrite one
part (round robin: system, then user), score the proposal on the same minibatch, and keep it
(scoring it on every training scenario) only if it does strictly better there. GEPA saves its
state in `run_dir` at the start of every iteration, so an interrupted optimization resumes
from its last finished iteration.

The budget is a ceiling (`BudgetCeiling`): GEPA's own stopper looks at the budget only
before an iteration, so the last one ran past it (a budget of 16 spent 18). An iteration
begins here only if its worst case fits in what is left: the parent and the proposal on the
minibatch, and the proposal on every training scenario if it is accepted.

`Progress` hears GEPA's events (`gepa.core.callbacks`): the budget spent, each iteration's
pool and front, recorded once the iteration has finished (an iteration that an interrupt
ends is not: it is done again on resume).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from gepa.api import optimize as gepa_optimize
from gepa.core.adapter import GEPAAdapter
from gepa.core.callbacks import (
    BudgetUpdatedEvent,
    GEPACallback,
    IterationEndEvent,
    IterationStartEvent,
    OptimizationEndEvent,
)
from gepa.core.state import GEPAState

from tipbench.optimize._adapter import TipbenchAdapter
from tipbench.optimize._feedback import ScenarioFeedback
from tipbench.optimize._lineage import candidate_of
from tipbench.optimize._sampling import SeededEpochSampler, SeededParetoSelector
from tipbench.optimize._summary import IterationSummary, summarize
from tipbench.suite import COMPOSITE_RANGE, Scenario

logger = logging.getLogger("tipbench.optimize")


class _Log:
    """GEPA's log lines, to tipbench's logger (not stdout: the CLI's output is its own)."""

    def log(self, message: str) -> None:
        logger.debug("gepa: %s", message)


@dataclass
class Events:
    """What the optimization reports as GEPA works (see the module's doc)."""

    training: Sequence[str]
    adapter: TipbenchAdapter
    on_begin: Callable[[int], None] = lambda done: None  # budget already spent
    on_spent: Callable[[int, int], None] = lambda iteration, count: None
    on_iteration: Callable[[IterationSummary], None] = lambda summary: None
    summaries: list[IterationSummary] = field(default_factory=list)
    final: GEPAState[Any, Any] | None = None
    _begun: bool = False

    def summary(self, state: GEPAState[Any, Any], iteration: int) -> IterationSummary:
        lineage = self.adapter.lineage
        counts = (len(lineage.proposals), len(lineage.skipped))
        return summarize(state, self.training, lineage.version_of, counts, iteration)

    def on_iteration_start(self, event: IterationStartEvent) -> None:
        state = event["state"]
        self.adapter.lineage.iteration = event["iteration"]
        if not self._begun:
            self._begun = True
            if state.i == 0:  # a new optimization: the start's scores are iteration 0
                self.on_begin(0)
                self.on_spent(0, state.total_num_evals)
                self._record(self.summary(state, 0))
            else:  # resumed: the budget spent before counts as done
                self.on_begin(state.total_num_evals)

    def on_budget_updated(self, event: BudgetUpdatedEvent) -> None:
        self.on_spent(event["iteration"], event["metric_calls_delta"])

    def on_iteration_end(self, event: IterationEndEvent) -> None:
        if sys.exc_info()[0] is not None:  # interrupted: this iteration is done again
            return
        self._record(self.summary(event["state"], event["iteration"]))

    def on_optimization_end(self, event: OptimizationEndEvent) -> None:
        state = self.final = event["final_state"]
        if not self.summaries or self.summaries[-1].evaluations != state.total_num_evals:
            self._record(self.summary(state, max(state.i + 1, 0)))

    def _record(self, summary: IterationSummary) -> None:
        self.summaries.append(summary)
        self.on_iteration(summary)


@dataclass(frozen=True)
class BudgetCeiling:
    """GEPA's stopper (`gepa.utils.StopperProtocol`): stop before an iteration that could
    spend past the budget. `max_metric_calls` is the budget, named as GEPA reads it."""

    max_metric_calls: int
    iteration_cost: int  # the most one iteration can spend

    def __call__(self, gepa_state: GEPAState[Any, Any]) -> bool:
        return gepa_state.total_num_evals + self.iteration_cost > self.max_metric_calls


def iteration_ceiling(n_training: int, minibatch: int) -> int:
    """The most one iteration after the first spends: a parent and its proposal on the
    minibatch, and the proposal on every training scenario if it is accepted."""
    return 2 * min(minibatch, n_training) + n_training


def run_gepa(
    adapter: TipbenchAdapter,
    training: Sequence[Scenario],
    *,
    budget: int,
    minibatch: int,
    seed: int,
    run_dir: str,
    events: Events,
) -> GEPAState[Any, Any]:
    """Run (or resume, from `run_dir`) GEPA over the training scenarios for `budget`
    evaluations; return its final state."""
    start = adapter.lineage.start
    typed: GEPAAdapter[Scenario, ScenarioFeedback, str] = adapter
    trainset: list[Any] = list(training)
    gepa_optimize(
        seed_candidate=candidate_of(start),
        trainset=trainset,
        adapter=cast("GEPAAdapter[Any, Any, Any]", typed),
        candidate_selection_strategy=SeededParetoSelector(seed),
        batch_sampler=SeededEpochSampler(minibatch, seed),
        perfect_score=float(COMPOSITE_RANGE[1]),
        skip_perfect_score=True,
        module_selector="round_robin",
        stop_callbacks=BudgetCeiling(budget, iteration_ceiling(len(trainset), minibatch)),
        logger=_Log(),
        run_dir=run_dir,
        callbacks=[cast(GEPACallback, events)],  # its methods are all optional (GEPA's doc)
        track_best_outputs=False,
        display_progress_bar=False,
        seed=seed,
        raise_on_exception=True,
    )
    if events.final is None:
        raise RuntimeError("GEPA ended without its final state")
    return events.final
