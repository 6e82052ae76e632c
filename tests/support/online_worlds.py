"""Seeded decision logs where tips come from several sources (bench cells) and one source's
tips truly do better with users: what the online tier's tests measure against.

Each decision is made in one of four contexts (equally likely) among six tips, two from each
of three prompt versions of one model. A tip's chance of being completed (reward 1, else 0)
is its category's base rate in the context plus its source's hidden effect. The logging
policy (an ε-greedy-like live policy with a floor) prefers the worst source's tips in the
contexts where every tip does well, and the best source's where every tip does badly: the
plain mean reward of each source's served tips ranks them wrongly, and only a
propensity-corrected estimate can find the truly better one. The true value of serving a
source's tips is known exactly (`truth`), the estimand of `tipbench.online._sources`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "llamacpp:smollm2-135m"
EXPERIMENT = "tip-bench-online"
PROMPTS = ("v1", "v2-mentor", "v3-few-shot")
CATEGORIES = ("focus", "break", "planning")
# two tips per source: (prompt, category)
TIPS = (
    ("v1", "focus"), ("v1", "break"),
    ("v2-mentor", "focus"), ("v2-mentor", "planning"),
    ("v3-few-shot", "break"), ("v3-few-shot", "planning"),
)  # fmt: skip
BASE = np.array(  # (context, category): the chance a tip is completed, before its source's effect
    [[0.70, 0.65, 0.75], [0.60, 0.70, 0.55], [0.20, 0.25, 0.15], [0.30, 0.20, 0.25]]
)
EFFECTS = {"v1": -0.08, "v2-mentor": 0.12, "v3-few-shot": 0.0}
# The logger: in the good contexts (0, 1) it prefers v1's tips, in the bad ones v2-mentor's.
PREFERENCE = np.array(
    [[4, 4, 1, 1, 2, 2], [4, 4, 1, 1, 2, 2], [1, 1, 4, 4, 2, 2], [1, 1, 4, 4, 2, 2]], dtype=float
)
LOGGING = PREFERENCE / PREFERENCE.sum(axis=1, keepdims=True)
_IDS = itertools.count(1)


def source(prompt: str, model: str = MODEL) -> str:
    return f"{model}|{prompt}"


@dataclass(frozen=True)
class OnlineWorld:
    """The world's parameters (overridable: effects per prompt, the logging probabilities)."""

    effects: Mapping[str, float] = field(default_factory=lambda: dict(EFFECTS))
    logging: np.ndarray = field(default_factory=lambda: LOGGING.copy())
    runs: Mapping[str, str] = field(default_factory=dict)  # prompt → its cell run's id
    model: str = MODEL
    experiment: str = EXPERIMENT

    def means(self) -> np.ndarray:
        """(context, tip) the chance each tip is completed."""
        columns = [BASE[:, CATEGORIES.index(c)] + self.effects[p] for p, c in TIPS]
        return np.clip(np.stack(columns, axis=1), 0.0, 1.0)

    def truth(self) -> dict[str, float]:
        """Each source's value of serving its tips: over the contexts, its tips' means
        weighted by the logging probabilities renormalised over them."""
        means, values = self.means(), {}
        for prompt in PROMPTS:
            mine = np.array([p == prompt for p, _ in TIPS])
            pi = self.logging * mine / (self.logging * mine).sum(axis=1, keepdims=True)
            values[source(prompt, self.model)] = float((pi * means).sum(axis=1).mean())
        return values

    def write(self, path: Path, seed: int, n: int) -> Path:
        """The log as `policy log export` writes it (JSON lines)."""
        path.write_text("".join(json.dumps(row) + "\n" for row in self.log(seed, n)))
        return path

    def log(self, seed: int, n: int, *, with_runs: bool = True) -> list[dict[str, Any]]:
        """n decisions of the logger, every one rewarded (rows of `policy log export`)."""
        rng = np.random.default_rng(seed)
        contexts = rng.integers(0, 4, size=n)
        cumulative = np.cumsum(self.logging, axis=1)[contexts]
        shown = np.minimum((rng.random((n, 1)) > cumulative).sum(axis=1), len(TIPS) - 1)
        rewards = rng.random(n) < self.means()[contexts, shown]
        return [
            self._row(int(c), self.logging[c], int(s), float(r), with_runs)
            for c, s, r in zip(contexts, shown, rewards, strict=True)
        ]

    def _row(
        self, context: int, p: Sequence[float], shown: int, reward: float, with_runs: bool
    ) -> dict[str, Any]:
        features = [1.0, *(float(context == k) for k in (1, 2, 3)), 0.0, 0.0, 0.0]
        candidates = []
        for index, ((prompt, category), probability) in enumerate(zip(TIPS, p, strict=True)):
            provenance: dict[str, Any] = {"model": self.model, "prompt_version": prompt}
            if with_runs and prompt in self.runs:
                provenance |= {"experiment": self.experiment, "run_id": self.runs[prompt],
                               "tip_index": index % 2}  # fmt: skip
            candidate = {"tip_id": f"t{index}", "category": category, "score": 0.0,
                         "probability": float(probability)}  # fmt: skip
            candidates.append({**candidate, "source": provenance})
        return {
            "decision_id": f"o{next(_IDS)}",
            "policy": "egreedy-v1",
            "route": "serve",
            "user_id": f"u{context}",
            "feature_version": "v1",
            "features": features,
            "candidates": candidates,
            "tip_id": f"t{shown}",
            "propensity": float(p[shown]),
            "shadows": [],
            "reward": reward,
            "event": "completed" if reward else "dismissed",
        }


def serve_online_world(state_url: str, world: OnlineWorld, seed: int, n: int) -> None:
    """`n` decisions through a real `PolicyService` on `state_url`: the live egreedy-v1 with
    ε = 1 (every tip alike), its candidates the world's six tips with their provenance, each
    rewarded by the world (the context k of a decision is its hour, 6·k)."""
    from tipbench.policies import Moment, PolicyConfig
    from tipbench.policy_service import CandidateTip, PolicyService, TipSource, open_store
    from tipbench.suite import load_suite

    catalogue = load_suite().catalogue
    assert catalogue is not None
    store = open_store(state_url)
    try:
        service = PolicyService(store, catalogue, PolicyConfig())
        service.configure({"live": "egreedy-v1", "shadows": [],
                           "policies": {"egreedy-v1": {"epsilon": 1.0}}})  # fmt: skip
        candidates = []
        for index, (prompt, category) in enumerate(TIPS):
            run = world.runs.get(prompt)
            experiment, tip_index = (world.experiment, index % 2) if run else (None, None)
            source = TipSource(world.model, prompt, experiment, run, tip_index)
            candidates.append(CandidateTip(f"t{index}", category, source))
        rng = np.random.default_rng(seed)
        means = world.means()
        for context in rng.integers(0, 4, size=n):
            moment = Moment(local_hour=6.0 * int(context), weekday=1, open_tasks=3,
                            minutes_to_deadline=None, tips_today=0)  # fmt: skip
            record = service.decide(f"u{context}", moment, candidates)
            shown = int(record.decision.tip_id[1:])
            completed = bool(rng.random() < means[context, shown])
            service.reward(None, record.id, float(completed),
                           "completed" if completed else "dismissed", None)  # fmt: skip
    finally:
        store.close()
