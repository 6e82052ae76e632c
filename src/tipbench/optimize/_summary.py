"""Where an optimization stands after an iteration, and the shortlist it ends with.

GEPA keeps a pool of accepted prompts (each scored on every training scenario) and, per
training scenario, the Pareto front: the prompts with the best score there (Agrawal et al.
2025, §3.3: a prompt best on some scenario is kept even when its mean is not the best, which
keeps varied strengths). The shortlist is the front's prompts other than the start, best
mean training score first, at most K of them: the ones worth judging on held-out scenarios.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any

from tipbench.suite import PromptVersion

if TYPE_CHECKING:
    from gepa.core.state import GEPAState

#: A GEPA pool candidate (its templates) → the prompt version it is.
VersionOf = Callable[[dict[str, str]], PromptVersion]


@dataclass(frozen=True)
class Program:
    """A prompt of GEPA's pool: its version, parent and mean training score."""

    version: str
    parent: str | None  # the pool's parent (None: the start)
    mean: float
    scores: dict[str, float]  # per training scenario
    on_front: bool  # best (or tied best) on some training scenario


@dataclass(frozen=True)
class IterationSummary:
    """The pool and front after an iteration (0: after scoring the start)."""

    iteration: int
    evaluations: int  # GEPA's metric calls so far: the budget spent
    programs: tuple[Program, ...]
    front: dict[str, tuple[str, ...]]  # training scenario → the versions best there
    proposals: int  # usable proposals so far (accepted or not)
    skipped: int  # unusable ones so far
    accepted: bool = False  # this iteration's proposal joined the pool
    notes: tuple[str, ...] = field(default=())
    seconds_per_evaluation: float | None = None  # this process's so far, if it spent any

    @property
    def best(self) -> Program:
        """The pool's best mean training score (the earliest of equals)."""
        return max(self.programs, key=lambda p: p.mean)

    def to_dict(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "evaluations": self.evaluations,
            "best": {"version": self.best.version, "mean": self.best.mean},
            "front": {scenario: list(versions) for scenario, versions in self.front.items()},
            "programs": [vars(p) for p in self.programs],
            "proposals": self.proposals,
            "skipped": self.skipped,
        }


def summarize(
    state: GEPAState[Any, Any],
    training: Sequence[str],
    version_of: VersionOf,
    counts: tuple[int, int],
    iteration: int,
) -> IterationSummary:
    """The pool and front of GEPA's `state`, by version and training scenario id; `counts`
    are the proposals and skipped proposals so far."""
    names = [version_of(candidate).version for candidate in state.program_candidates]
    front_of = state.program_at_pareto_front_valset
    on_front = {index for members in front_of.values() for index in members}
    programs = tuple(
        Program(
            names[index],
            _parent(state, names, index),
            fmean(scores.values()) if scores else 0.0,
            {training[int(k)]: v for k, v in sorted(scores.items())},
            index in on_front,
        )
        for index, scores in enumerate(state.prog_candidate_val_subscores)
    )
    front = {
        training[int(k)]: tuple(names[i] for i in sorted(members))
        for k, members in sorted(front_of.items())
    }
    return IterationSummary(iteration, state.total_num_evals, programs, front, *counts)


def _parent(state: GEPAState[Any, Any], names: list[str], index: int) -> str | None:
    parents = [p for p in state.parent_program_for_candidate[index] if p is not None]
    return names[parents[0]] if parents else None


def shortlist(summary: IterationSummary, start: str, size: int) -> list[Program]:
    """At most `size` of the front's prompts other than `start`, best mean first."""
    ranked = [p for p in summary.programs if p.on_front and p.version != start]
    return sorted(ranked, key=lambda p: -p.mean)[:size]
