"""The policies: exact, floored probabilities; seeded draws; incremental ridge statistics."""

from __future__ import annotations

import numpy as np
import pytest

from tipbench._errors import ConfigError
from tipbench.policies import (
    POLICIES,
    ArmStats,
    PolicyConfig,
    decide,
    draw,
    policy_spec,
    spread,
)

CATEGORIES = ["focus", "break", "focus", "planning"]


def trained(dimension: int, category_reward: dict[str, float], n: int = 30) -> dict[str, ArmStats]:
    rng = np.random.default_rng(1)
    arms = {}
    for category, reward in category_reward.items():
        stats = ArmStats.empty(dimension)
        for _ in range(n):
            x = np.concatenate([[1.0], rng.normal(size=dimension - 1)])
            stats = stats.updated(x, reward)
        arms[category] = stats
    return arms


def test_incremental_statistics_equal_the_batch_ridge_fit() -> None:
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(50, 7))
    rs = rng.uniform(size=50)
    stats = ArmStats.empty(7)
    for x, r in zip(xs, rs, strict=True):
        stats = stats.updated(x, r)
    batch = np.linalg.solve(xs.T @ xs + 2.0 * np.eye(7), xs.T @ rs)
    assert stats.n == 50
    assert stats.model(2.0).theta == pytest.approx(batch)
    again = ArmStats.from_bytes(*stats.to_bytes(), n=stats.n)
    assert again.model(2.0).theta == pytest.approx(batch)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_candidate_has_at_least_the_floor_and_probabilities_sum_to_one(name: str) -> None:
    spec = policy_spec(name)
    config = PolicyConfig(epsilon=0.2, floor=0.1, alpha=0.5)
    arms = trained(spec.dimension, {"focus": 0.9, "break": 0.1, "planning": 0.4})
    x = np.concatenate([[1.0], np.full(spec.dimension - 1, 0.3)])
    choice = decide(spec, config, x, CATEGORIES, arms, u=0.5)
    floor = (config.floor if spec.kind == "linucb" else config.epsilon) / len(CATEGORIES)
    assert sum(choice.probabilities) == pytest.approx(1)
    assert min(choice.probabilities) == pytest.approx(floor)
    assert choice.propensity == choice.probabilities[choice.index]
    # the two focus candidates are tied best and share the greedy mass exactly
    assert (
        choice.probabilities[0]
        == choice.probabilities[2]
        == pytest.approx(floor + (1 - 4 * floor) / 2)
    )


def test_the_draw_picks_by_the_probabilities() -> None:
    spec = policy_spec("egreedy-v1")
    config = PolicyConfig(epsilon=0.4)
    arms = trained(7, {"focus": 1.0, "break": 0.0})
    x = np.ones(7)
    # probabilities: focus 0.1 + 0.6 = 0.7, break 0.1, quick-win 0.1, planning 0.1
    cats = ["focus", "break", "quick-win", "planning"]
    picks = [
        decide(spec, config, x, cats, arms, u).index for u in (0.0, 0.69, 0.71, 0.79, 0.81, 0.99)
    ]
    assert picks == [0, 0, 1, 1, 2, 3]
    counts = np.bincount(
        [decide(spec, config, x, cats, arms, draw(7, spec.name, i)).index for i in range(4000)],
        minlength=4,
    )
    assert counts / 4000 == pytest.approx([0.7, 0.1, 0.1, 0.1], abs=0.03)


def test_same_seed_same_choices_other_seed_other_choices() -> None:
    spec = policy_spec("linucb")
    x = np.ones(12)
    cats = ["focus", "break", "planning"]
    config = PolicyConfig(floor=0.9)

    def choices(seed: int) -> list[int]:
        return [decide(spec, config, x, cats, {}, draw(seed, "linucb", i)).index for i in range(50)]

    assert choices(3) == choices(3)
    assert choices(3) != choices(4)
    assert 0 <= draw(0, "linucb", 1) < 1


def test_linucb_explores_what_it_is_unsure_of() -> None:
    spec = policy_spec("linucb")
    arms = trained(12, {"focus": 0.5}, n=200)  # break has never been tried
    x = np.concatenate([[1.0], np.zeros(11)])
    choice = decide(spec, PolicyConfig(alpha=1.0), x, ["focus", "break"], arms, u=0.0)
    assert choice.scores[1] > choice.scores[0]  # prior 0 + α·1 beats 0.5 + a narrow width
    greedy = decide(spec, PolicyConfig(alpha=0.0), x, ["focus", "break"], arms, u=0.0)
    assert greedy.scores[0] > greedy.scores[1]


def test_spread_and_unknown_policy() -> None:
    assert spread([1.0, 0.0], 0.5) == [0.75, 0.25]
    assert spread([0.3, 0.3, 0.3], 0.1) == pytest.approx([1 / 3] * 3)
    with pytest.raises(ConfigError, match="unknown policy 'greedy'"):
        policy_spec("greedy")
