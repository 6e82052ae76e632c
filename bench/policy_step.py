"""One decide + update in process: tipbench's ε-greedy against Vowpal Wabbit's, same stream.

A seeded stream of tip opportunities (a moment, 4 candidates from the catalogue's categories,
a hidden linear reward per category) is played twice per round:

- **tipbench**: `egreedy-v1` (7 features built from the moment, one ridge model per
  category, ε = 0.1): `features_v1` + `decide` + `ArmStats.updated` for the chosen category;
- **VW**: `vowpalwabbit` with `--cb_explore_adf --epsilon 0.1` on the same 7 features as the
  shared context and the category as the action's feature: `predict` (the pmf), the same
  draw, then `learn` with cost = −reward and the pmf's probability.

Both draw with the same uniform numbers. Prints each side's µs per step (best of the
rounds, the order alternating) and the ratio tipbench / VW (target ≤ 1), plus both sides'
mean reward as a check that both learn. Needs the `bench` extra (`vowpalwabbit`).

    python bench/policy_step.py [--steps 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _report import best_ratio  # noqa: E402
from tipbench.policies import (  # noqa: E402
    ArmStats,
    Moment,
    PolicyConfig,
    decide,
    features_v1,
    policy_spec,
)
from tipbench.suite import load_suite  # noqa: E402

TARGET_RATIO = 1.0
EPSILON = 0.1


@dataclass(frozen=True)
class Step:
    moment: Moment
    categories: tuple[str, ...]
    u: float
    noise: float


def stream(steps: int, seed: int) -> tuple[list[Step], dict[str, np.ndarray]]:
    """The opportunities and the hidden reward weights per category."""
    rng = np.random.default_rng(seed)
    catalogue = load_suite().catalogue
    assert catalogue is not None
    categories = catalogue.category_ids
    truth = {c: rng.normal(scale=0.3, size=7) for c in categories}
    played = []
    for _ in range(steps):
        moment = Moment(
            local_hour=float(rng.integers(0, 24)),
            weekday=int(rng.integers(0, 7)),
            open_tasks=int(rng.integers(0, 12)),
            minutes_to_deadline=None if rng.random() < 0.2 else float(rng.integers(0, 20000)),
            tips_today=int(rng.integers(0, 5)),
        )
        chosen = tuple(str(c) for c in rng.choice(categories, size=4, replace=False))
        played.append(Step(moment, chosen, float(rng.random()), float(rng.normal(scale=0.05))))
    return played, truth


def reward(truth: dict[str, np.ndarray], category: str, x: np.ndarray, noise: float) -> float:
    return float(np.clip(0.5 + truth[category] @ x + noise, 0.0, 1.0))


def run_tipbench(steps: list[Step], truth: dict[str, np.ndarray]) -> tuple[float, float]:
    spec = policy_spec("egreedy-v1")
    config = PolicyConfig(epsilon=EPSILON)
    arms: dict[str, ArmStats] = {}
    total = 0.0
    started = time.perf_counter()
    for step in steps:
        x = features_v1(step.moment)
        choice = decide(spec, config, x, step.categories, arms, step.u)
        category = step.categories[choice.index]
        r = reward(truth, category, x, step.noise)
        arms[category] = (arms.get(category) or ArmStats.empty(7)).updated(x, r)
        total += r
    return time.perf_counter() - started, total / len(steps)


def _vw_example(
    x: np.ndarray, categories: tuple[str, ...], label: tuple[int, float, float] | None
) -> list[str]:
    shared = "shared |c " + " ".join(f"f{i}:{v:.6f}" for i, v in enumerate(x))
    lines = [shared]
    for index, category in enumerate(categories):
        prefix = ""
        if label is not None and label[0] == index:
            prefix = f"0:{label[1]:.6f}:{label[2]:.6f} "
        lines.append(f"{prefix}|a {category}")
    return lines


def run_vw(steps: list[Step], truth: dict[str, np.ndarray]) -> tuple[float, float]:
    from vowpalwabbit import Workspace

    vw = Workspace(f"--cb_explore_adf --epsilon {EPSILON} -q ca --quiet")
    total = 0.0
    started = time.perf_counter()
    for step in steps:
        x = features_v1(step.moment)
        pmf = vw.predict(_vw_example(x, step.categories, None))
        cumulative = np.cumsum(pmf)
        index = min(
            int(np.searchsorted(cumulative, step.u * cumulative[-1], side="right")), len(pmf) - 1
        )
        r = reward(truth, step.categories[index], x, step.noise)
        vw.learn(_vw_example(x, step.categories, (index, -r, float(pmf[index]))))
        total += r
    elapsed = time.perf_counter() - started
    vw.finish()
    return elapsed, total / len(steps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    steps, truth = stream(args.steps, args.seed)
    run_tipbench(steps[:200], truth)  # warm up imports and caches on both sides
    run_vw(steps[:200], truth)
    times: dict[str, list[float]] = {"tipbench": [], "vw": []}
    means: dict[str, float] = {}
    for round_ in range(args.rounds):
        order = ("tipbench", "vw") if round_ % 2 == 0 else ("vw", "tipbench")
        for side in order:
            elapsed, mean = (run_tipbench if side == "tipbench" else run_vw)(steps, truth)
            times[side].append(elapsed)
            means[side] = mean
    best = {side: min(values) / args.steps * 1e6 for side, values in times.items()}
    ratio = best_ratio(times["vw"], times["tipbench"])
    print(f"{args.steps} steps (decide + update) × {args.rounds} rounds, best round per side")
    for side in ("tipbench", "vw"):
        rounds = ", ".join(f"{t / args.steps * 1e6:.1f}" for t in times[side])
        print(
            f"{side:9} {best[side]:8.1f} µs/step  (rounds: {rounds})  mean reward {means[side]:.3f}"
        )
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"tipbench / VW ratio {ratio:.2f} (target <= {TARGET_RATIO:g}): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
