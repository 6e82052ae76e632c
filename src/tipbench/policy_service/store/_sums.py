"""What logged decisions add to the models and the counters, gathered so that it can be added
in one locked update per row, or taken back (erasure) the same way.

A model is Σx·xᵀ, Σr·x and n over the rewards it learned from (`ArmStats`), so what a set of
decisions taught it is the same three sums over those decisions: `Contributions` gathers them
per key (policy and category for a model; user, policy and category for a pruned user's
sums). `Tallies` gathers the `/stats` counters per policy, and those of served decisions per
policy and source.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tipbench.policies import ArmStats, Vector, add_reward, shadow_weight
from tipbench.policy_service.store._schema import COUNTED, NO_SOURCE


@dataclass
class Sums:
    """Σx·xᵀ, Σr·x and n of some rewards."""

    xx: Vector
    rx: Vector
    n: int

    def applied_to(self, stored: ArmStats, sign: int) -> ArmStats:
        """`stored` with these sums added (sign 1) or taken back (sign -1); a model left with
        no reward is exactly empty (no rounding residue)."""
        n = stored.n + sign * self.n
        if n <= 0:
            return ArmStats.empty(stored.dimension)
        return ArmStats(xx=stored.xx + sign * self.xx, rx=stored.rx + sign * self.rx, n=n)


class Contributions:
    """Sums per key, e.g. (policy, category)."""

    def __init__(self) -> None:
        self._sums: dict[tuple[str, ...], Sums] = {}

    def add(self, key: tuple[str, ...], x: Vector, reward: float, weight: float = 1.0) -> None:
        sums = self._sums.get(key)
        if sums is None:
            d = x.shape[0]
            sums = self._sums[key] = Sums(np.zeros((d, d)), np.zeros(d), 0)
        sums.xx, sums.rx = add_reward(sums.xx, sums.rx, x, reward, weight)
        sums.n += 1

    def add_sums(self, key: tuple[str, ...], other: ArmStats) -> None:
        sums = self._sums.get(key)
        if sums is None:
            self._sums[key] = Sums(other.xx.copy(), other.rx.copy(), other.n)
        else:
            sums.xx += other.xx
            sums.rx += other.rx
            sums.n += other.n

    def __iter__(self) -> Iterator[tuple[tuple[str, ...], Sums]]:
        """In key order: the order rows are locked in, so that writers cannot deadlock."""
        return iter(sorted(self._sums.items()))

    def __bool__(self) -> bool:
        return bool(self._sums)


def shadow_update_weight(live_propensity: float) -> float:
    """The weight a shadow learns a reward with (the rule the simulator chose: `SHADOW_WEIGHTING`
    in `tipbench.policies`)."""
    return float(shadow_weight(np.array([live_propensity]))[0])


class Tallies:
    """Counter increments per policy (the columns of `COUNTED`), and, for what a policy served,
    per policy and source (`served`)."""

    def __init__(self) -> None:
        self._by_policy: defaultdict[str, dict[str, float]] = defaultdict(
            lambda: dict.fromkeys(COUNTED, 0)
        )
        self._by_source: defaultdict[tuple[str, str], dict[str, float]] = defaultdict(
            lambda: dict.fromkeys(COUNTED, 0)
        )

    def add(self, policy: str, column: str, amount: float = 1) -> None:
        self._by_policy[policy][column] += amount

    def served(self, policy: str, source: str | None, column: str, amount: float = 1) -> None:
        """Count a decision the policy served (a tip of `source`, None: unknown) under both."""
        self._by_policy[policy][column] += amount
        self._by_source[(policy, source or NO_SOURCE)][column] += amount

    def __iter__(self) -> Iterator[tuple[str, dict[str, float]]]:
        return iter(sorted(self._by_policy.items()))

    def by_source(self) -> Iterator[tuple[tuple[str, str], dict[str, float]]]:
        """((policy, source), increments) in key order (the order rows are locked in)."""
        return iter(sorted(self._by_source.items()))
