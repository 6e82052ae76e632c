"""The winner's curse of prompt optimization, simulated, and what holding out does about it.

A world where no proposal is better than the prompt it started from: every version (the
start and K proposals) has the same true mean composite; a version's score on a scenario is
that mean, plus the scenario's effect (shared by every version), plus the version's own
reaction to the scenario, plus the noise of the mean of its tips. The human tier sees that
score, the automatic judge the same plus its own noise (a calibrated judge).

Each trial splits the suite's scenarios with the product's split (`split_scenarios`), scores
every version on the training scenarios, shortlists as the optimizer does (`shortlist`: the
Pareto front's versions, best mean first), then:

- **the curse**: the shortlist's best training mean minus its held-out mean. Its true mean
  is the start's, so any gap is selection: the best of K noisy estimates overstates
  (Thaler 1988, "The winner's curse"; in model selection, Cawley & Talbot 2010);
- **the held-out gate**: the product's gate (`promote.decide`, both tiers, the start in
  production) on leaderboards (`compare.build_leaderboard`) of the start and the shortlist
  on the held-out scenarios. Every promotion is a false one;
- **the naive rule**, for contrast: promote the shortlist's best when its training mean beats
  the start's by the gate's margin, i.e. believe the optimizer's own scores.

Seeded: the same `CurseWorld` and seed give the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import fmean

import numpy as np
import numpy.typing as npt

from tipbench.auto_judge import JudgeCalibration
from tipbench.compare import build_leaderboard
from tipbench.optimize import IterationSummary, Program, shortlist, split_scenarios
from tipbench.promote import DEFAULT_MARGIN_POINTS, ProductionPrompt, decide
from tipbench.suite import CRITERIA, FLAGS, Scenario
from tipbench.tracking import CellRun, metric_name

MODEL = "ollama:qwen2.5:1.5b"
START = "v1"
_Float = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CurseWorld:
    """How the simulated optimizations are made (composite points, 2–17 scale)."""

    n_scenarios: int = 8  # the bundled suite's: 2 training, 6 held out
    proposals: int = 8  # K: the versions GEPA's pool holds besides the start
    shortlist: int = 3
    mean: float = 11.0
    scenario_sd: float = 1.0
    reaction_sd: float = 1.0  # a version's own reaction to a scenario
    tips_sd: float = 0.9  # the mean of 5 tips with sd 2
    judge_sd: float = 0.5  # the automatic judge's own noise


@dataclass(frozen=True)
class CurseFigures:
    """What the trials found."""

    trials: int
    training: int  # training scenarios per trial
    heldout: int
    overstatement: float  # mean of (best training mean − its held-out mean)
    overstatement_sd: float  # the trials' standard deviation of it
    heldout_false_promotions: int  # by the gate, on the held-out scenarios
    naive_false_promotions: int  # by the naive rule, on the training scenarios

    @property
    def heldout_rate(self) -> float:
        return self.heldout_false_promotions / self.trials

    @property
    def naive_rate(self) -> float:
        return self.naive_false_promotions / self.trials


def simulate_curse(world: CurseWorld, trials: int, seed: int) -> CurseFigures:
    """Run `trials` optimizations of `world` in the null (see the module's doc)."""
    rng = np.random.default_rng(seed)
    scenarios = [_scenario(i) for i in range(world.n_scenarios)]
    split = split_scenarios(scenarios, seed)
    index = {s.id: i for i, s in enumerate(scenarios)}
    train = [index[s] for s in split.training]
    held = [index[s] for s in split.heldout]
    gaps: list[float] = []
    held_false = naive_false = 0
    versions = [START, *(f"p{k}" for k in range(1, world.proposals + 1))]
    for _ in range(trials):
        human = _scores(world, rng, len(versions))
        auto = human + rng.normal(0.0, world.judge_sd, human.shape)
        best = shortlist(_pool(versions, human, train, split.training), START, world.shortlist)
        if not best:
            continue
        top = versions.index(best[0].version)
        gaps.append(best[0].mean - float(human[top, held].mean()))
        chosen = [START, *(p.version for p in best)]
        held_false += _promoted(versions, chosen, human, auto, held, split.heldout) is not None
        naive_false += best[0].mean - float(human[0, train].mean()) >= DEFAULT_MARGIN_POINTS
    return CurseFigures(
        trials,
        len(train),
        len(held),
        fmean(gaps),
        float(np.std(gaps, ddof=1)),
        held_false,
        naive_false,
    )


def heldout_power(world: CurseWorld, gain: float, trials: int, seed: int) -> float:
    """The share of `trials` optimizations in which the held-out gate promotes a proposal
    that is truly better than the start by `gain` composite points (the first proposal; the
    others equal to the start), on the product's split, shortlist and gate."""
    rng = np.random.default_rng(seed)
    scenarios = [_scenario(i) for i in range(world.n_scenarios)]
    split = split_scenarios(scenarios, seed)
    index = {s.id: i for i, s in enumerate(scenarios)}
    train = [index[s] for s in split.training]
    held = [index[s] for s in split.heldout]
    versions = [START, *(f"p{k}" for k in range(1, world.proposals + 1))]
    promoted = 0
    for _ in range(trials):
        human = _scores(world, rng, len(versions))
        human[1] += gain
        auto = human + rng.normal(0.0, world.judge_sd, human.shape)
        best = shortlist(_pool(versions, human, train, split.training), START, world.shortlist)
        chosen = [START, *(p.version for p in best)]
        promoted += _promoted(versions, chosen, human, auto, held, split.heldout) == versions[1]
    return promoted / trials


def _scenario(number: int) -> Scenario:
    return Scenario(f"s{number:02d}", "p", "P", "", "t", "T", "08:00", "", ("task",))


def _scores(world: CurseWorld, rng: np.random.Generator, n_versions: int) -> _Float:
    """(version, scenario) human scores: every version's true mean is the same."""
    shape = (n_versions, world.n_scenarios)
    scenario = rng.normal(0.0, world.scenario_sd, world.n_scenarios)
    reaction = rng.normal(0.0, world.reaction_sd, shape)
    tips = rng.normal(0.0, world.tips_sd, shape)
    scores: _Float = world.mean + scenario + reaction + tips
    return scores


def _pool(
    versions: list[str], human: _Float, columns: list[int], ids: tuple[str, ...]
) -> IterationSummary:
    """GEPA's pool after scoring every version on the training scenarios (automatic tier
    in the optimizer; here the same scores, the pool is what is being selected from)."""
    block = human[:, columns]
    best = block.max(axis=0)
    programs = tuple(
        Program(
            version,
            None if version == START else START,
            float(block[v].mean()),
            dict(zip(ids, map(float, block[v]), strict=True)),
            bool(np.any(block[v] >= best)),
        )
        for v, version in enumerate(versions)
    )
    front = {
        sid: tuple(versions[v] for v in np.flatnonzero(block[:, j] >= best[j]))
        for j, sid in enumerate(ids)
    }
    return IterationSummary(0, 0, programs, front, len(versions) - 1, 0)


def _promoted(
    versions: list[str],
    chosen: list[str],
    human: _Float,
    auto: _Float,
    columns: list[int],
    ids: tuple[str, ...],
) -> str | None:
    """The version of `chosen` the product's gate promotes over the start on these
    scenarios (both tiers; the automatic judge calibrated), None if none."""
    runs = [
        CellRun(
            MODEL,
            version,
            sid,
            metrics={
                metric_name("human", "composite"): float(human[versions.index(version), c]),
                metric_name("auto", "composite"): float(auto[versions.index(version), c]),
            },
        )
        for version in chosen
        for c, sid in zip(columns, ids, strict=True)
    ]
    human_board = build_leaderboard(runs, "human", n_resamples=1000)
    auto_board = replace(build_leaderboard(runs, "auto", n_resamples=1000), calibration=(_JUDGE,))
    production = ProductionPrompt("tipbench-tips", 1, START, "")
    decision = decide(human_board, auto_board, production)
    return decision.prompt_version if decision.promote else None


_JUDGE = JudgeCalibration(
    "ollama:qwen2.5:3b", "tip-v1", 0.6, dict.fromkeys((*CRITERIA, *FLAGS), 0.9), 35, 35
)
