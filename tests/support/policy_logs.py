"""Small hand-made decision logs, in the rows of `tipbench policy log export`."""

from __future__ import annotations

import itertools
from typing import Any

BIAS_V1 = [1.0] + [0.0] * 6
BIAS_V2 = [1.0] + [0.0] * 11
_IDS = itertools.count(1)  # every decision of a log has its own id: a repeated one is refused


def row(
    logging: tuple[float, float],
    shown: int,
    reward: float | None,
    target: tuple[float, float],
    decision_id: str | None = None,
) -> dict[str, Any]:
    """A decision between `focus-25` and `break-walk`: egreedy-v1 decided with `logging`, the
    shadow egreedy-v2 had `target`; every feature but the bias is 0. Its id is `decision_id`,
    else a new one (`d1`, `d2`, …)."""
    tips = [("focus-25", "focus"), ("break-walk", "break")]

    def candidates(probabilities: tuple[float, float]) -> list[dict[str, Any]]:
        return [
            {"tip_id": t, "category": c, "score": 0.0, "probability": p}
            for (t, c), p in zip(tips, probabilities, strict=True)
        ]

    return {
        "decision_id": decision_id or f"d{next(_IDS)}",
        "policy": "egreedy-v1",
        "route": "serve",
        "user_id": "u1",
        "feature_version": "v1",
        "features": BIAS_V1,
        "candidates": candidates(logging),
        "tip_id": tips[shown][0],
        "shadows": [
            {
                "policy": "egreedy-v2",
                "feature_version": "v2",
                "features": BIAS_V2,
                "candidates": candidates(target),
                "tip_id": "focus-25",
            }
        ],
        "reward": reward,
        "event": "completed",
    }


HAND_MADE = [  # the reward model's folds go by id: h1, h2 in one, h3, h7 in the other
    row((0.5, 0.5), 0, 1.0, (0.8, 0.2), "h1"),  # w = 1.6
    row((0.5, 0.5), 1, 0.0, (0.8, 0.2), "h2"),  # w = 0.4
    row((0.9, 0.1), 1, 1.0, (0.2, 0.8), "h3"),  # w = 8
    row((0.9, 0.1), 0, 0.5, (0.2, 0.8), "h7"),  # w = 2/9
    row((0.9, 0.1), 0, None, (0.2, 0.8), "h8"),  # never rewarded: not counted
]


CATEGORIES = ("focus", "break", "planning", "social")


def decision(
    logging: tuple[float, ...],
    shown: int,
    reward: float | None,
    target: tuple[float, ...],
    decision_id: str | None = None,
) -> dict[str, Any]:
    """A decision between `len(logging)` tips `t0`, `t1`, … (categories `CATEGORIES` in
    turn): egreedy-v1 decided with `logging`, the shadow egreedy-v2 had `target`."""
    tips = [(f"t{i}", CATEGORIES[i % len(CATEGORIES)]) for i in range(len(logging))]

    def candidates(probabilities: tuple[float, ...]) -> list[dict[str, Any]]:
        return [
            {"tip_id": t, "category": c, "score": 0.0, "probability": p}
            for (t, c), p in zip(tips, probabilities, strict=True)
        ]

    base = row((0.5, 0.5), 0, reward, (0.5, 0.5), decision_id)
    return {
        **base,
        "candidates": candidates(logging),
        "tip_id": tips[shown][0],
        "propensity": logging[shown],
        "shadows": [{**base["shadows"][0], "candidates": candidates(target), "tip_id": "t0"}],
    }
