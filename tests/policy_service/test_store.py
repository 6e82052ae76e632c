"""The state store contract, run against SQLite and a real PostgreSQL alike."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tipbench.policies import ArmStats, Moment, PolicyConfig, ProfileStats
from tipbench.policy_service import (
    AlreadyRewarded,
    CandidateTip,
    DecisionNotFound,
    PolicyService,
    Roles,
    StateStore,
    WrongPolicy,
    check_roles,
    open_store,
)
from tipbench.suite import load_suite

MOMENT = Moment(local_hour=8, weekday=1, open_tasks=3, minutes_to_deadline=600, tips_today=0)
CANDIDATES = [
    CandidateTip("t1", "focus"),
    CandidateTip("t2", "break"),
    CandidateTip("t3", "planning"),
]


def service(store: StateStore, seed: int = 0) -> PolicyService:
    catalogue = load_suite().catalogue
    assert catalogue is not None
    return PolicyService(store, catalogue, PolicyConfig(seed=seed))


def test_decide_reward_learn_and_count(store: StateStore) -> None:
    svc = service(store)
    store.set_roles(check_roles("egreedy-v2", ["linucb", "egreedy-v1"]))
    record = svc.decide("u1", MOMENT, CANDIDATES)
    assert record.decision.policy == "egreedy-v2" and record.route == "serve"
    assert [s.policy for s in record.shadows] == ["linucb", "egreedy-v1"]
    svc.reward("egreedy-v2", record.id, 0.75, "completed", 42.0)

    shown = record.decision.category
    for decision in (record.decision, *record.shadows):  # the live policy and every shadow
        arms = store.arms([decision.policy])[decision.policy]
        assert list(arms) == [shown]  # learn for the category of the tip shown ...
        x = np.array(decision.features)  # ... with their own logged features
        expected = ArmStats.empty(len(x)).updated(x, 0.75)
        assert arms[shown].n == 1
        assert arms[shown].xx == pytest.approx(expected.xx)
        assert arms[shown].rx == pytest.approx(expected.rx)
    assert record.decision.settings == PolicyConfig()  # the settings in force, recorded
    profile = store.profile("u1")
    assert (profile.responses, profile.completed, profile.dwell_n) == (1, 1, 1)
    assert profile.dwell_sum_s == pytest.approx(42.0)
    assert store.profile("nobody") == ProfileStats()

    counts = store.counts("egreedy-v2")
    assert (counts.decisions, counts.rewards, counts.mean_reward) == (1, 1, 0.75)
    assert counts.events == {"completed": 1}
    assert store.counts("linucb").shadow_decisions == 1
    assert store.counts("linucb").decisions == 0


def test_a_second_reward_is_refused_and_changes_nothing(store: StateStore) -> None:
    svc = service(store)
    record = svc.decide("u1", MOMENT, CANDIDATES, policy="egreedy-v1")
    first = svc.reward("egreedy-v1", record.id, 1.0, "completed", 10.0)
    before = (store.arms(["egreedy-v1"]), store.profile("u1"), store.counts("egreedy-v1"))
    assert first.policy == "egreedy-v1"
    assert svc.reward("egreedy-v1", record.id, 1.0, "completed", 10.0) == first  # a retry
    assert svc.reward(None, record.id, 1.0, "completed", 10.0) == first  # by id alone
    with pytest.raises(AlreadyRewarded, match=r"rewarded already, with reward 1\.0"):
        svc.reward("egreedy-v1", record.id, 0.0, "dismissed", 1.0)
    with pytest.raises(DecisionNotFound):
        svc.reward("egreedy-v1", "no-such-decision", 1.0, "completed", None)
    with pytest.raises(WrongPolicy, match="made by 'egreedy-v1', not 'linucb'"):
        svc.reward("linucb", record.id, 1.0, "completed", None)
    after = (store.arms(["egreedy-v1"]), store.profile("u1"), store.counts("egreedy-v1"))
    assert after[1:] == before[1:]
    arm_before = before[0]["egreedy-v1"][record.decision.category]
    arm_after = after[0]["egreedy-v1"][record.decision.category]
    assert arm_after.n == arm_before.n == 1 and (arm_after.rx == arm_before.rx).all()
    (logged,) = [d for d in store.decisions() if d.record.id == record.id]
    assert logged.reward is not None and logged.reward.event == "completed"


def test_concurrent_rewards_for_one_user_and_policy_lose_nothing(state_url: str) -> None:
    stores = [open_store(state_url) for _ in range(2)]  # two "replicas" (SQLite: two handles)
    try:
        svc = service(stores[0])
        ids = [
            svc.decide("u1", MOMENT, [CandidateTip("t1", "focus")], policy="egreedy-v1").id
            for _ in range(40)
        ]
        errors: list[BaseException] = []

        def reward(store: StateStore, chunk: list[str]) -> None:
            try:
                for decision_id in chunk:
                    service(store).reward("egreedy-v1", decision_id, 0.5, "viewed", 2.0)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=reward, args=(stores[i % 2], ids[i::4])) for i in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        arm = stores[1].arms(["egreedy-v1"])["egreedy-v1"]["focus"]
        assert arm.n == 40 and arm.rx[0] == pytest.approx(20.0)  # bias feature: Σ r·1
        assert stores[1].profile("u1").responses == 40
        assert stores[1].profile("u1").dwell_sum_s == pytest.approx(80.0)
    finally:
        for store in stores:
            store.close()


def test_same_seed_same_choices(state_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    def run(url: str) -> list[str]:
        store = open_store(url)
        try:
            svc = service(store, seed=11)
            store.reset("all", None, None)
            return [
                svc.decide("u1", MOMENT, CANDIDATES, policy="linucb").decision.tip_id
                for _ in range(30)
            ]
        finally:
            store.close()

    first = run(state_url)
    assert first == run(state_url)  # `reset all` restarts the sequence
    assert len(set(first)) > 1


def test_reset_scopes(store: StateStore) -> None:
    svc = service(store)
    for user in ("u1", "u2"):
        for policy in ("egreedy-v1", "linucb"):
            record = svc.decide(user, MOMENT, CANDIDATES, policy=policy)
            svc.reward(policy, record.id, 1.0, "completed", None)
    svc.reset("user", None, "u1")
    assert store.profile("u1") == ProfileStats() and store.profile("u2").responses == 2
    assert {d.record.user_id for d in store.decisions()} == {"u2"}
    svc.reset("policy", "linucb", None)
    assert store.arms(["linucb"]) == {"linucb": {}} and store.arms(["egreedy-v1"])["egreedy-v1"]
    assert {d.record.decision.policy for d in store.decisions()} == {"egreedy-v1"}
    svc.reset("all", None, None)
    assert list(store.decisions()) == [] and store.arms(["egreedy-v1"]) == {"egreedy-v1": {}}


def test_roles_are_stored(store: StateStore) -> None:
    assert store.roles() is None
    assert store.set_roles(Roles("linucb", ("egreedy-v1",)), only_if_unset=True).live == "linucb"
    assert store.set_roles(Roles("egreedy-v2"), only_if_unset=True).live == "linucb"
    assert store.set_roles(Roles("egreedy-v2")) == Roles("egreedy-v2", ())


def test_the_log_is_read_in_pages_in_sequence_order(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tipbench.policy_service.store import _sql

    monkeypatch.setattr(_sql, "EXPORT_PAGE", 3)
    svc = service(store)
    store.set_roles(check_roles("egreedy-v1", ["linucb"]))
    made = [svc.decide(f"u{i}", MOMENT, CANDIDATES) for i in range(8)]
    logged = list(store.decisions())
    assert [d.record.id for d in logged] == [r.id for r in made]
    assert [d.record.sequence for d in logged] == sorted(r.sequence for r in made)
    assert all(d.record == r for d, r in zip(logged, made, strict=True))
