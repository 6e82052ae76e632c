"""Logged traffic of known worlds, built as `tipbench.evaluate.Traffic` arrays directly (a
seeded simulation of thousands of logs would spend its time writing and checking rows):
an ε-greedy logging policy, a target policy, Bernoulli rewards whose means are known, so
each log's true value is known decision by decision.

Candidates are K tips of K categories (one each); the features are a bias and two standard
normal features (the rest of the v1 vector 0), and a category's mean reward is linear in
them, clipped to [0.02, 0.98].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tipbench.evaluate import Traffic

CATEGORIES = ("focus", "break", "planning", "social")
COEFFICIENTS = np.array(  # per category: bias, feature 1, feature 2
    [[0.3, 0.1, 0.0], [0.5, -0.1, 0.1], [0.4, 0.0, -0.1], [0.6, 0.1, 0.1]]
)


@dataclass(frozen=True)
class KnownLog:
    traffic: Traffic
    truth: float  # the target's true value: its expected reward, decision by decision
    truth_difference: float  # the target's minus the logging policy's


def traffic_of(
    rng: np.random.Generator,
    logging: np.ndarray,
    target: np.ndarray,
    means: np.ndarray,
    x: np.ndarray,
    policy: str = "egreedy-v2",
) -> KnownLog:
    """A log of n decisions: tips shown with `logging` (n, K), rewarded with `means` (n, K);
    `target` (n, K) the probabilities the shadow `policy` logged; `x` (n, 7) features."""
    n, k = logging.shape
    chosen = (rng.random(n)[:, None] > np.cumsum(logging, axis=1)).sum(axis=1)
    chosen = np.minimum(chosen, k - 1)
    reward = (rng.random(n) < means[np.arange(n), chosen]).astype(np.float64)
    traffic = Traffic(
        decider=("egreedy-v1",) * n,
        route=("serve",) * n,
        user=("u",) * n,
        reward=reward,
        chosen=chosen.astype(np.int64),
        mask=np.ones((n, k), dtype=np.bool_),
        categories=(tuple(CATEGORIES[:k]),) * n,
        logging=logging,
        targets={"egreedy-v1": logging, policy: target},
        x_v1=x,
        x_v2=np.full((n, 12), np.nan),
        decisions=n,
        fold=rng.integers(2, size=n),
    )
    truth = float((target * means).sum(axis=1).mean())
    difference = float(((target - logging) * means).sum(axis=1).mean())
    return KnownLog(traffic, truth, difference)


def epsilon_greedy_log(
    seed: int, n: int, agree: float, epsilon: float = 0.1, shift: float = 0.0
) -> KnownLog:
    """An ε-greedy logger over 4 tips (its greedy tip at random, 1 − ε + ε/4; the others ε/4)
    and a deterministic target that shows the greedy tip with probability `agree`, else
    another at random; `shift` is added to every mean but the greedy tip's (a target that
    never agrees is worse by about `shift` where negative)."""
    rng = np.random.default_rng(seed)
    k = len(CATEGORIES)
    x = np.zeros((n, 7))
    x[:, 0] = 1.0
    x[:, 1:3] = rng.normal(size=(n, 2))
    greedy = rng.integers(k, size=n)
    logging = np.full((n, k), epsilon / k)
    logging[np.arange(n), greedy] += 1 - epsilon
    other = (greedy + rng.integers(1, k, size=n)) % k
    shown = np.where(rng.random(n) < agree, greedy, other)
    target = np.zeros((n, k))
    target[np.arange(n), shown] = 1.0
    means = x[:, :3] @ COEFFICIENTS.T + shift
    means[np.arange(n), greedy] -= shift  # every mean moved but the greedy tip's
    return traffic_of(rng, logging, target, np.clip(means, 0.02, 0.98), x)


def heavy_weights_log(seed: int, n: int) -> KnownLog:
    """Two tips of true means 0.2 and 0.7: the logger shows the second 3% of the time, the
    target 90% of it (weights of 30 on 3% of the decisions); true value 0.65."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 7))
    x[:, 0] = 1.0
    logging = np.tile([0.97, 0.03], (n, 1))
    target = np.tile([0.1, 0.9], (n, 1))
    means = np.tile([0.2, 0.7], (n, 1))
    return traffic_of(rng, logging, target, means, x)
