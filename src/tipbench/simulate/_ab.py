"""Sim A/B (`tipbench policy simulate --tips-from EXPERIMENT`): the simulated users are served
the tips the bench's cells wrote, one arm per source (`model|prompt_version`), and each arm's
reward is reported with its interval over seeds, paired across arms.

The users respond to a tip's quality as well as its category. Its quality is its judged
composite (the human's scores where a human scored it, else the automatic judge's), and the
world derived from it is stated: a tip's log-odds of being completed move by `QUALITY_LOGIT`
per composite point above or below the mean of every judged tip of the experiment (0.15: a
tip 4 points better than the mean is completed as if its log-odds were 0.6 higher, 0.30 →
0.44). That hidden per-tip effect, averaged over a source's tips, is its per-source effect;
the serving policy never sees it (it reads the moment and the tip's category only).

Each arm plays the same worlds: the same users, moments and candidate slots (the catalogue's
categories), the same random numbers for every outcome, and in each slot a tip of its own
source drawn at the same uniform position in its pool (`stream_seed(seed, "bench tips")`);
only the tips' quality differs between arms, so the arms are compared paired by seed as the
simulator compares policies (`summarise`, `render_report`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tipbench._errors import ConfigError
from tipbench.policies import PolicyConfig, Vector
from tipbench.simulate._outcome import SeedOutcome, seed_outcome
from tipbench.simulate._play import play
from tipbench.simulate._report import SimulationReport, summarise
from tipbench.simulate._simulation import SEED_BATCH, SimulationConfig, Study, load_study
from tipbench.simulate._world import Shift, make_world, stream_seed
from tipbench.tracking import TrackingStore

QUALITY_LOGIT = 0.15
"""Log-odds of completing a tip per point of its judged composite above the experiment's mean."""


@dataclass(frozen=True)
class BenchTip:
    """A tip a bench cell wrote: its run, its candidate id there, its judged composite."""

    run_id: str
    candidate: str
    composite: float


@dataclass(frozen=True)
class TipPool:
    """A source's judged tips: what its arm serves."""

    model: str
    prompt_version: str
    tips: tuple[BenchTip, ...]

    @property
    def source(self) -> str:
        return f"{self.model}|{self.prompt_version}"

    @property
    def mean_composite(self) -> float:
        return float(np.mean([t.composite for t in self.tips]))


@dataclass(frozen=True)
class SimAB:
    """A finished sim A/B: its study (the serving policy, the worlds), the arms, the report
    (its "policies" are the arms' sources, `live` the baseline)."""

    study: Study
    pools: tuple[TipPool, ...]
    reference: float  # the mean composite the quality is measured from
    outcomes: tuple[SeedOutcome, ...]
    report: SimulationReport


def bench_tips(store: TrackingStore, experiment: str) -> tuple[TipPool, ...]:
    """Every judged tip of the experiment's cells, by source (the human's scores of a run
    where it has them, else the automatic judge's).

    Raises:
        ConfigError: no such experiment, or none of its tips is judged.
    """
    experiment_id = store.find_experiment(experiment)
    if experiment_id is None:
        raise ConfigError(f"--tips-from: no experiment {experiment!r} in the tracking store")
    found: dict[tuple[str, str], list[BenchTip]] = {}
    for run in store.cell_runs(experiment_id, judgeable=True):
        scores = run.scores("human") or run.scores("auto")
        tips = found.setdefault((run.model, run.prompt_version), [])
        tips += [BenchTip(run.run_id, cid, s.composite) for cid, s in sorted(scores.items())]
    pools = tuple(TipPool(m, p, tuple(t)) for (m, p), t in sorted(found.items()) if t)
    if not pools:
        raise ConfigError(
            f"--tips-from: experiment {experiment!r} has no judged tips: the users' response to "
            "a tip's quality is derived from its judged composite (run tipbench judge auto)"
        )
    return pools


def quality_shift(pool: TipPool, reference: float) -> Shift:
    """Each candidate slot's shift of log-odds: the quality of the pool's tip drawn for it."""
    quality = QUALITY_LOGIT * (np.array([t.composite for t in pool.tips]) - reference)

    def shift(seed: int, shape: tuple[int, int]) -> Vector:
        u = np.random.default_rng(stream_seed(seed, "bench tips")).random(shape)
        picked: Vector = quality[np.minimum((u * len(quality)).astype(np.int64), len(quality) - 1)]
        return picked

    return shift


def _baseline(pools: Sequence[TipPool], baseline: str | None) -> str:
    if baseline is None:
        return pools[0].source
    for pool in pools:
        if baseline in (pool.source, pool.prompt_version):
            return pool.source
    known = ", ".join(p.source for p in pools)
    raise ConfigError(f"--baseline {baseline!r} is not a judged source (known: {known})")


def sim_ab(
    config: SimulationConfig,
    pools: Sequence[TipPool],
    *,
    baseline: str | None = None,
    settings: Mapping[str, PolicyConfig] | None = None,
) -> SimAB:
    """Every arm played by the study's live policy in the same worlds (see the module).

    Raises:
        ConfigError: as `load_study`; a baseline that is not one of the sources.
    """
    if not pools:
        raise ConfigError("a sim A/B needs at least one source of judged tips")
    base = _baseline(pools, baseline)
    study = load_study(
        config.model_copy(update={"policies": (config.live_policy,), "live": None}), settings
    )
    contender, population = study.contenders[0], study.population
    reference = float(np.mean([t.composite for pool in pools for t in pool.tips]))
    seeds = config.seed_list
    outcomes: list[SeedOutcome] = []
    for start in range(0, len(seeds), SEED_BATCH):
        batch = seeds[start : start + SEED_BATCH]
        for pool in pools:
            shift = quality_shift(pool, reference)
            worlds = [
                make_world(population, study.catalogue, seed, config.users, config.days, shift)
                for seed in batch
            ]
            played = play(worlds, contender, len(population.categories))
            outcomes += [
                seed_outcome(world, pool.source, chosen, population.persona_ids, config.days)
                for world, chosen in zip(worlds, played.chosen, strict=True)
            ]
    report = summarise(outcomes, base, population.persona_ids)
    return SimAB(study, tuple(pools), reference, tuple(outcomes), report)
