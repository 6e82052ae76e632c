"""The policies: ε-greedy on v1 or v2 features, and LinUCB on v2, each with an exploration floor.

Every policy scores each candidate with its category's model and then spreads probability:

- `egreedy-v1`, `egreedy-v2`: with probability ε a uniformly random candidate, else the best
  predicted reward. p(i) = ε/K + (1 − ε)·[i is best]/m, for K candidates and m tied best.
  The floor is ε/K.
- `linucb`: the best upper confidence bound θ·x + α·√(xᵀA⁻¹x), with a floor γ spread
  uniformly: p(i) = γ/K + (1 − γ)·[i is best]/m. The floor is γ/K.

So every candidate has a probability of at least the floor (> 0), and the propensity a
decision returns is the exact probability with which its choice was drawn: what off-policy
evaluation needs. The draw is `u` in [0, 1), derived from the seed, the policy's name and the
decision's sequence number (`draw`), so the same seed and the same requests give the same
choices.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tipbench._errors import ConfigError
from tipbench.policies._arms import ArmStats
from tipbench.policies._features import FEATURE_NAMES, FeatureVersion, Vector

PolicyKind = Literal["egreedy", "linucb"]
TIE_TOLERANCE = 1e-12


class PolicyConfig(BaseModel):
    """The knobs every policy reads (from `tipbench policy serve` options)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epsilon: float = Field(default=0.1, gt=0, le=1, description="ε-greedy's exploration rate")
    alpha: float = Field(default=1.0, ge=0, description="LinUCB's confidence multiplier α")
    floor: float = Field(default=0.05, gt=0, le=1, description="LinUCB's exploration floor γ")
    ridge: float = Field(default=1.0, gt=0, description="ridge penalty λ of every arm's model")
    seed: int = Field(default=0, ge=0, description="seed of every decision's draw")


@dataclass(frozen=True)
class PolicySpec:
    """A named policy: how it scores, on which features."""

    name: str
    kind: PolicyKind
    features: FeatureVersion

    @property
    def dimension(self) -> int:
        return len(FEATURE_NAMES[self.features])


POLICIES: dict[str, PolicySpec] = {
    spec.name: spec
    for spec in (
        PolicySpec("egreedy-v1", "egreedy", "v1"),
        PolicySpec("egreedy-v2", "egreedy", "v2"),
        PolicySpec("linucb", "linucb", "v2"),
    )
}


def policy_spec(name: str) -> PolicySpec:
    try:
        return POLICIES[name]
    except KeyError:
        known = ", ".join(POLICIES)
        raise ConfigError(f"unknown policy {name!r} (known: {known})") from None


@dataclass(frozen=True)
class Choice:
    """What a policy decided: the chosen index, and every candidate's score and probability."""

    index: int
    scores: tuple[float, ...]
    probabilities: tuple[float, ...]

    @property
    def propensity(self) -> float:
        return self.probabilities[self.index]


def draw(seed: int, policy: str, sequence: int) -> float:
    """The uniform number in [0, 1) that decision `sequence` of `policy` draws with."""
    digest = hashlib.sha256(f"{seed}:{policy}:{sequence}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def decide(
    spec: PolicySpec,
    config: PolicyConfig,
    x: Vector,
    categories: Sequence[str],
    arms: Mapping[str, ArmStats],
    u: float,
) -> Choice:
    """Choose among candidates (given by their categories) with features `x` and draw `u`.

    `arms` holds the statistics of each category's model; a category missing from it has
    seen no reward yet.
    """
    if not categories:
        raise ValueError("a decision needs at least one candidate")
    models = {
        c: (arms.get(c) or ArmStats.empty(spec.dimension)).model(config.ridge)
        for c in set(categories)
    }
    if spec.kind == "linucb":
        scores = [models[c].predict(x) + config.alpha * models[c].width(x) for c in categories]
        explore = config.floor
    else:
        scores = [models[c].predict(x) for c in categories]
        explore = config.epsilon
    probabilities = spread(scores, explore)
    cumulative = np.cumsum(probabilities)
    index = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), len(scores) - 1)
    return Choice(index=index, scores=tuple(scores), probabilities=tuple(probabilities))


def spread(scores: Sequence[float], explore: float) -> list[float]:
    """`explore` spread evenly over all candidates, the rest evenly over the tied best."""
    k = len(scores)
    best = max(scores)
    tied = [s >= best - TIE_TOLERANCE for s in scores]
    m = sum(tied)
    return [explore / k + (1 - explore) * (1.0 / m if t else 0.0) for t in tied]
