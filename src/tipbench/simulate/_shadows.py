"""How should a shadow learn? The simulator answers: `/serve` traffic with each weighting rule.

The live policy chooses and learns; each shadow scores every request and learns from the
live choice's reward, unweighted or weighted by 1/propensity (`tipbench.policies.
shadow_weight`). A shadow's worth is the true value of what it would have shown: per
opportunity Σ_j π(j)·μ(j) with its logged probabilities π and the true expected rewards μ,
averaged; compared between rules paired by seed, and with the live policy it watches (its
true value in the same worlds, paired by seed: does a shadow learning from the live policy's
traffic come to choose better than the live policy itself?).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tipbench.policies import SHADOW_WEIGHTINGS, Vector
from tipbench.simulate._play import Contender, Played, serve
from tipbench.simulate._report import over_seeds
from tipbench.simulate._simulation import SimulationConfig, load_study
from tipbench.simulate._world import World, make_world
from tipbench.stats import Estimate, PairedComparison, paired_comparison


def true_values(worlds: Sequence[World], probabilities: Vector) -> Vector:
    """(S,) the true mean expected reward of a policy with these (S, T, K) probabilities."""
    expected = np.stack([w.expected for w in worlds])
    values: Vector = (probabilities * expected).sum(axis=2).mean(axis=1)
    return values


@dataclass(frozen=True)
class ShadowRule:
    """One weighting rule's shadows: their value, the difference from the live policy's in
    the same worlds, and the difference from the first rule's."""

    weighting: str
    values: dict[str, Estimate]  # shadow → its true value over seeds
    per_seed: dict[str, dict[int, float]]
    vs_first: dict[str, PairedComparison]  # shadow → value − the first rule's, by seed
    live: Estimate  # the live policy's true value over seeds
    vs_live: dict[str, PairedComparison]  # shadow → value − the live policy's, by seed


def _paired(before: dict[int, float], after: dict[int, float]) -> PairedComparison:
    """`after` − `before`, paired by seed."""
    return paired_comparison(
        {str(k): v for k, v in before.items()}, {str(k): v for k, v in after.items()}
    )


def _by_seed(seeds: Sequence[int], worlds: Sequence[World], played: Played) -> dict[int, float]:
    return dict(zip(seeds, map(float, true_values(worlds, played.probabilities)), strict=True))


def shadow_study(
    config: SimulationConfig, weightings: Sequence[str] = SHADOW_WEIGHTINGS
) -> list[ShadowRule]:
    """Serve the study's worlds with its live policy and the others as shadows, once per rule."""
    study = load_study(config)
    live = Contender.named(config.live_policy)
    shadows = [c for c in study.contenders if c.label != live.label]
    seeds = config.seed_list
    worlds = [
        make_world(study.population, study.catalogue, seed, config.users, config.days)
        for seed in seeds
    ]
    rules: list[ShadowRule] = []
    for weighting in weightings:
        served = serve(worlds, live, shadows, len(study.population.categories), weighting)
        per_seed = {s.contender.label: _by_seed(seeds, worlds, s) for s in served.shadows}
        live_values = _by_seed(seeds, worlds, served.live)
        first = rules[0].per_seed if rules else {}
        rules.append(
            ShadowRule(
                weighting=weighting,
                values={name: over_seeds(list(v.values())) for name, v in per_seed.items()},
                per_seed=per_seed,
                vs_first={name: _paired(first[name], per_seed[name]) for name in first},
                live=over_seeds(list(live_values.values())),
                vs_live={name: _paired(live_values, v) for name, v in per_seed.items()},
            )
        )
    return rules
