"""What the policy service's tests share: a request, a service over a store, the models as the
decision log says they should be, and a serving state with real traffic (a simulated world
played through a real `PolicyService`, its `/serve` path, every decision rewarded with the
simulated response)."""

from __future__ import annotations

import random

import numpy as np

from tipbench.policies import ArmStats, Moment, PolicyConfig, shadow_weight
from tipbench.policy_service import CandidateTip, PolicyService, Roles, StateStore, open_store
from tipbench.simulate import World, make_world
from tipbench.suite import load_suite

POLICIES = ("egreedy-v1", "egreedy-v2", "linucb")
MOMENT = Moment(local_hour=8, weekday=1, open_tasks=3, minutes_to_deadline=600, tips_today=0)
CANDIDATES = [
    CandidateTip("t1", "focus"),
    CandidateTip("t2", "break"),
    CandidateTip("t3", "planning"),
]


def make_service(store: StateStore, seed: int = 0) -> PolicyService:
    catalogue = load_suite().catalogue
    assert catalogue is not None
    return PolicyService(store, catalogue, PolicyConfig(seed=seed))


def recomputed(store: StateStore) -> dict[tuple[str, str], ArmStats]:
    """Every model as the log says it should be: each decision settled with a reward teaches
    its policy and every shadow that scored it, for the category of the tip shown."""
    models: dict[tuple[str, str], ArmStats] = {}

    def learn(key: tuple[str, str], x: np.ndarray, r: float, w: float = 1.0) -> None:
        models[key] = (models.get(key) or ArmStats.empty(len(x))).updated(x, r, w)

    for logged in store.decisions():
        if logged.reward is None or logged.reward.reward is None:
            continue
        decision, r = logged.record.decision, logged.reward.reward
        learn((decision.policy, decision.category), np.array(decision.features), r)
        weight = float(shadow_weight(np.array([decision.propensity]))[0])
        for shadow in logged.record.shadows:
            learn((shadow.policy, decision.category), np.array(shadow.features), r, weight)
    return models


def stored_models(store: StateStore) -> dict[tuple[str, str], ArmStats]:
    """Every stored model that learned something."""
    return {
        (policy, category): arm
        for policy, arms in store.arms(POLICIES).items()
        for category, arm in arms.items()
        if arm.n
    }


def assert_models_match(store: StateStore, expected: dict[tuple[str, str], ArmStats]) -> None:
    stored = stored_models(store)
    assert set(stored) == set(expected)
    for key, arm in stored.items():
        assert arm.n == expected[key].n, key
        assert np.allclose(arm.xx, expected[key].xx, atol=1e-9), key
        assert np.allclose(arm.rx, expected[key].rx, atol=1e-9), key


def serve_world(
    state_url: str,
    roles: Roles,
    seed: int = 0,
    users: int = 30,
    days: int = 14,
    *,
    skip_reward_every: int = 0,
) -> World:
    """Play world `seed` through the service at `state_url` with `roles`; returns the world.
    With `skip_reward_every` = k, every k-th decision is never rewarded. The decisions' ids
    come from the seed too: they draw the evaluation's cross-fitting folds, so the same world
    gives the same evaluation (with random ids the DR interval of one world moves by ±0.01)."""
    suite = load_suite()
    assert suite.population is not None and suite.catalogue is not None
    tips = suite.catalogue.tips
    world = make_world(suite.population, suite.catalogue, seed, users, days)
    store = open_store(state_url)
    try:
        ids = random.Random(seed)
        service = PolicyService(
            store,
            suite.catalogue,
            PolicyConfig(seed=seed),
            new_id=lambda: f"{ids.getrandbits(128):032x}",
        )
        service.set_roles(roles)
        for k in range(world.steps):
            candidates = [CandidateTip(tips[t].id, tips[t].category) for t in world.tips[k]]
            user = int(world.schedule.user[k])
            record = service.decide(
                f"u{user}", world.schedule.moment(k), candidates, world.users.profiles[user]
            )
            if skip_reward_every and k % skip_reward_every == skip_reward_every - 1:
                continue
            j = [c.tip_id for c in candidates].index(record.decision.tip_id)
            service.reward(
                roles.live, record.id, float(world.reward[k, j]), world.event(k, j),
                float(world.dwell_s[k, j]),
            )  # fmt: skip
    finally:
        store.close()
    return world
