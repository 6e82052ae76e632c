"""Simulated judged experiments that drive the product's judging loop (issue 31, item 7).

An experiment is a grid of cells (model × prompt) on the same scenarios, several runs per
scenario. A run's human score is built as a person's would be: a latent quality (the
cell's mean, the scenario's effect shared by every cell, the cell's own reaction to the
scenario, and the run's noise, larger on some runs than others: heteroscedastic), judged
on three **integer 1–5 criteria** (each rounded and clipped at the ceiling of 5) and added
up into the rubric's composite (flags passed: + 2). The truth an interval must cover is
the cell's expected composite over the whole population of scenarios (`truth`).

Four automatic judges score every run, and a fifth, **decent** (follows the human closely,
no bias: the judge of the power figures, `gap_world`):

- **biased**: follows the human closely but adds 2 composite points to one model's cells;
- **contrary**: follows the human on every cell but the first (a leading cell), where it
  is anti-correlated with the human's scores;
- **ceiling**: integer 1–5 criteria, generous by a point, so most runs get the top score;
- **useless**: noise.

Its noise grows with the run's difficulty, which the judge reports (an active order's
rates). Many experiments are handed to the product at once as one `Judged` whose pools are
the experiments; `race` then runs the product's loop on them (`judging.snapshot` and
`next_units`: the same calls the judging page makes), revealing one human score per
experiment per step and reading the promotion gate's standing (`decide_leader` in the
combined tier, `human_decision` in the human tier) after every label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from tipbench.human_tier import (
    Queues,
    human_decision,
    next_units,
    queue_clocks,
    queue_inclusion,
    snapshot,
)
from tipbench.stats import Judged, Sample, resolution_variance

JUDGES = ("biased", "contrary", "ceiling", "useless")
Tier = Literal["combined", "human"]
_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_CRITERIA = 3


@dataclass(frozen=True)
class World:
    """How the simulated experiments are made (latent means on a criterion's 1–5 scale).

    The default has two cells truly equal at the top (any promotion is false), on two
    models: the biased judge favours the first model's cells, the contrary judge is
    anti-correlated inside the first cell.
    """

    means: tuple[float, ...] = (4.0, 4.0, 3.7, 3.5)
    models: tuple[int, ...] = (0, 1, 0, 1)
    n_scenarios: int = 8
    runs: int = 2
    scenario_sd: float = 0.35
    interaction_sd: float = 0.2
    run_sd: float = 0.35
    criterion_sd: float = 0.45

    @property
    def n_cells(self) -> int:
        return len(self.means)

    @property
    def n_runs(self) -> int:
        return self.n_scenarios * self.runs


def _composite(latent: _Float, shift: float, sd: float, rng: np.random.Generator) -> _Float:
    """Three integer 1–5 criteria around ``latent + shift`` (noise ``sd``, rounded, clipped
    at the ceiling), plus 2 for the flags."""
    noise = rng.normal(0.0, sd, (*latent.shape, _CRITERIA))
    crit = np.clip(np.rint(latent[..., None] + shift + noise), 1, 5)
    out: _Float = crit.sum(axis=-1) + 2.0
    return out


def _latent(world: World, n: int, rng: np.random.Generator) -> tuple[_Float, _Float]:
    """(n, C, S·R) latent run qualities and each run's difficulty in [0, 1]."""
    c, s, r = world.n_cells, world.n_scenarios, world.runs
    means = np.asarray(world.means)[None, :, None, None]
    scenario = rng.normal(0.0, world.scenario_sd, (n, 1, s, 1))
    reaction = rng.normal(0.0, world.interaction_sd, (n, c, s, 1))
    difficulty = rng.random((n, c, s, r))
    run = rng.normal(0.0, 1.0, (n, c, s, r)) * world.run_sd * (0.3 + 1.4 * difficulty)
    latent = means + scenario + reaction + run
    return latent.reshape(n, c, s * r), difficulty.reshape(n, c, s * r)


def truth(world: World, draws: int = 200_000, seed: int = 99) -> _Float:
    """(C,) each cell's expected human composite over the population of scenarios."""
    rng = np.random.default_rng(seed)
    latent, _ = _latent(replace(world, n_scenarios=1, runs=1), draws, rng)
    out: _Float = _composite(latent[:, :, 0], 0.0, world.criterion_sd, rng).mean(axis=0)
    return out


@dataclass(frozen=True)
class Experiments:
    """Simulated experiments: per (experiment, cell, run) the human's and judges' scores."""

    world: World
    human: _Float  # (E, C, U) with U = S·R runs, scenario-major
    auto: dict[str, _Float]  # judge -> (E, C, U)
    difficulty: _Float  # (E, C, U) in [0, 1]: how unsure the judge says it is
    truth: _Float  # (C,)

    @property
    def n(self) -> int:
        return int(self.human.shape[0])

    def judged(self, judge: str) -> Judged:
        """The experiments as one `Judged` with no human score yet (pools = experiments)."""
        e, c, u = self.human.shape
        r = self.world.runs
        return Judged.build(
            np.arange(e * c).repeat(u),
            np.tile(np.arange(u) // r, e * c),
            self.auto[judge].reshape(-1).copy(),
            np.full(e * c * u, np.nan),
            np.zeros(e * c * u, dtype=bool),
            np.arange(e).repeat(c),
            resolution_variance(_CRITERIA),  # the composite adds 3 integer criteria
        )


def simulate(world: World, n: int, seed: int) -> Experiments:
    """`n` experiments of `world`, seeded."""
    rng = np.random.default_rng(seed)
    latent, difficulty = _latent(world, n, rng)
    human = _composite(latent, 0.0, world.criterion_sd, rng)
    noise = rng.normal(0.0, 1.0, latent.shape) * (0.4 + 1.6 * difficulty)
    close = 3.0 * latent + 2.0 + noise
    favoured = (np.asarray(world.models) == 0)[None, :, None]
    contrary = close.copy()
    contrary[:, 0] = 3.0 * (2.0 * world.means[0] - latent[:, 0]) + 2.0 + noise[:, 0]
    auto = {
        "decent": close,
        "biased": close + 2.0 * favoured,
        "contrary": contrary,
        "ceiling": _composite(latent + 0.15 * noise, 1.0, world.criterion_sd, rng),
        "useless": rng.normal(12.0, 2.0, latent.shape),
    }
    return Experiments(world, human, auto, difficulty, truth(world))


def gap_world(gap: float, n_scenarios: int = 8, runs: int = 3) -> World:
    """4 cells a `gap` of composite points apart at the top (13, 13 − gap, then 1 and 2
    points further behind), on two models, the bundled suite's 8 scenarios and 3 runs each
    by default: the world of issue 43's power figures. Its cells' reactions to a scenario
    (sd 0.38 on a criterion's scale) make a one-look paired t test of the top two on every
    run find a gap of 3 in 95% of experiments and of 1.5 in 44%, as the outside check
    measured on the bundled suite."""
    composites = (13.0, 13.0 - gap, 12.0 - gap, 11.0 - gap)
    return World(
        means=tuple((m - 2.0) / 3.0 for m in composites),
        models=(0, 1, 0, 1),
        n_scenarios=n_scenarios,
        runs=runs,
        interaction_sd=0.38,
    )


def one_look_power(experiments: Experiments, alpha: float = 0.05) -> float:
    """The share of experiments in which a paired t test of the top two cells on every run's
    human score (one look, two-sided, scenario means paired) finds the first ahead."""
    from scipy.stats import t

    e, c, _ = experiments.human.shape
    s, r = experiments.world.n_scenarios, experiments.world.runs
    means = experiments.human.reshape(e, c, s, r).mean(axis=3)
    diff = means[:, 0] - means[:, 1]
    statistic = diff.mean(axis=1) / (diff.std(axis=1, ddof=1) / np.sqrt(s))
    return float(np.mean(statistic > t.ppf(1.0 - alpha / 2.0, s - 1)))


def order_sample(experiments: Experiments, k: int, rates: _Float, seed: int) -> Sample:
    """Each cell's first `k` runs of a queue drawn with `rates` (`queue_clocks`), with the
    inclusion probabilities the product gives them (`queue_inclusion`)."""
    judged = experiments.judged(JUDGES[0])
    rng = np.random.default_rng(seed)
    clocks = queue_clocks(rates, rng)
    rank = np.empty(len(clocks), dtype=np.intp)
    by_cell = np.lexsort((clocks, judged.cell))
    rank[by_cell] = np.arange(len(clocks)) % experiments.human.shape[2]
    units, inclusion = queue_inclusion(judged.cell, rates, clocks, rank < k)
    return Sample(units, inclusion)


def with_human(judged: Judged, experiments: Experiments, units: _Int) -> Judged:
    """`judged` with the human's scores on `units` revealed."""
    human = judged.human.copy()
    human[units] = experiments.human.reshape(-1)[units]
    return Judged(
        judged.cell,
        judged.scenario,
        judged.weight,
        judged.auto,
        human,
        judged.known,
        judged.pool,
        judged.floor,
    )


@dataclass(frozen=True)
class Race:
    """How each experiment's judging went: after how many human labels its gate first
    found the leader decided (-1: never, within the budget), and which cell it named."""

    labels: _Int  # (E,)
    leader: _Int  # (E,) cell within the experiment

    def decided(self) -> npt.NDArray[np.bool_]:
        return self.labels >= 0

    def found(self, best: int, within: int | None = None) -> npt.NDArray[np.bool_]:
        """Decided on cell `best` (within `within` labels, if given)."""
        found = self.decided() & (self.leader == best)
        out: npt.NDArray[np.bool_] = found if within is None else found & (self.labels <= within)
        return out

    def wrong(self, best: frozenset[int]) -> npt.NDArray[np.bool_]:
        """Decided on a cell outside `best` (with equal top cells, pass an empty set: any
        promotion is false)."""
        out: npt.NDArray[np.bool_] = self.decided() & ~np.isin(self.leader, list(best))
        return out


def race(
    experiments: Experiments,
    judge: str,
    kind: Literal["active", "uniform"],
    *,
    tier: Tier = "combined",
    alpha: float = 0.05,
    seed: int = 0,
    budget: int | None = None,
    use_judge: bool = True,
) -> Race:
    """Serve and reveal one human label per experiment at a time through the product's
    loop, reading the gate's standing after every label, until each experiment's leader
    is decided or `budget` labels are spent.

    Args:
        kind: The judging order ("active": queues ordered by the judge's reported
            difficulty, the cell chosen by the open comparisons; "uniform").
        tier: Whose standing the gate reads: the combined tier's, or the human tier's
            alone (the gate's path without a judging order; labels come uniformly).
        use_judge: False: the combined tier without the judge (λ = 0).
    """
    e, c, u = experiments.human.shape
    budget = c * u if budget is None else min(budget, c * u)
    judged = experiments.judged(judge)
    rates = 1.0 + experiments.difficulty.reshape(-1) if kind == "active" else np.ones(e * c * u)
    queues = Queues(kind, rates, queue_clocks(rates, np.random.default_rng(seed)))
    labels = np.full(e, -1, dtype=np.intp)
    leader = np.full(e, -1, dtype=np.intp)
    for k in range(budget + 1):
        now = snapshot(judged, queues, alpha, use_judge=use_judge)
        decision = now.decision if tier == "combined" else human_decision(judged, alpha)[0]
        new = (labels < 0) & decision.decided
        labels[new] = k
        leader[new] = (decision.leader - np.arange(e) * c)[new]
        if np.all(labels >= 0) or k == budget:
            break
        served = next_units(judged, queues, now if tier == "combined" else None)
        served = served[(served >= 0) & (labels[judged.pool[judged.cell[served]]] < 0)]
        judged = with_human(judged, experiments, served)
    return Race(labels, leader)
