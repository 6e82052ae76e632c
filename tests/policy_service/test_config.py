"""The serving config in the state: roles and per-policy settings that a starting replica never
reverts, partial changes that keep what they do not name, settings recorded with every
decision, and absurd values refused (on SQLite and a real PostgreSQL)."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import ValidationError

from support.policy_state import CANDIDATES, MOMENT, make_service
from tipbench.policies import PolicyConfig
from tipbench.policy_service import PolicyService, StateStore, open_store
from tipbench.policy_service.store._config import merge, resolve, seed_document


def flags(live: str = "egreedy-v1", shadows: tuple[str, ...] = (), **settings: float) -> dict:
    """What `policy serve` passes to `seed`: every option, defaults included."""
    return seed_document(
        resolve({"live": live, "shadows": list(shadows)}, PolicyConfig(**settings))
    )


def test_flags_seed_an_empty_state_and_never_revert_a_populated_one(store: StateStore) -> None:
    svc = make_service(store)
    first = svc.seed(flags("egreedy-v1", ("linucb",)), {"live": "egreedy-v1"})
    assert first.seeded and first.config.live == "egreedy-v1"
    assert first.config.shadows == ("linucb",)
    svc.configure({"live": "linucb", "shadows": ["egreedy-v1"]})  # a promotion

    given = {"live": "egreedy-v1", "shadows": ["linucb"]}
    again = svc.seed(flags("egreedy-v1", ("linucb",)), given)
    assert not again.seeded and again.config.live == "linucb"  # the replica kept it
    assert again.ignored == ["live linucb → egreedy-v1", "shadows [egreedy-v1] → [linucb]"]
    assert svc.serving_config().live == "linucb"

    given = {"live": "egreedy-v1", "shadows": []}
    forced = svc.seed(flags("egreedy-v1"), given, reconfigure=True)
    assert forced.config.live == "egreedy-v1" and forced.config.shadows == ()
    assert forced.changed == ["live linucb → egreedy-v1", "shadows [egreedy-v1] → []"]
    assert forced.ignored == []


def test_a_partial_change_keeps_what_it_does_not_name(store: StateStore) -> None:
    svc = make_service(store)
    svc.configure({"live": "egreedy-v1", "shadows": ["linucb", "egreedy-v2"]})
    svc.configure({"policies": {"linucb": {"alpha": 0.5}}})
    svc.configure({"live": "egreedy-v2", "shadows": ["linucb"]})
    config = svc.configure({"reward_window_s": 3600})
    assert (config.live, config.shadows) == ("egreedy-v2", ("linucb",))
    assert config.settings("linucb").alpha == 0.5 and config.reward_window_s == 3600
    assert config.settings("egreedy-v1") == PolicyConfig()
    config = svc.configure({"policies": {"linucb": {"floor": 0.1}}})
    assert (config.settings("linucb").alpha, config.settings("linucb").floor) == (0.5, 0.1)
    with pytest.raises(ValidationError, match="cannot be live and a shadow"):
        svc.configure({"live": "linucb"})  # still a shadow: name the shadows too
    assert svc.serving_config().live == "egreedy-v2"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"policies": {"linucb": {"alpha": 1e308}}}, ("policies", "linucb", "alpha")),
        ({"policies": {"linucb": {"alpha": float("inf")}}}, ("policies", "linucb", "alpha")),
        ({"policies": {"egreedy-v1": {"epsilon": float("nan")}}}, ("policies", "egreedy-v1")),
        ({"policies": {"egreedy-v2": {"ridge": 0}}}, ("policies", "egreedy-v2", "ridge")),
        ({"policies": {"egreedy-v2": {"seed": -1}}}, ("policies", "egreedy-v2", "seed")),
        ({"policies": {"greedy": {"seed": 1}}}, ("policies",)),
        ({"live": "greedy"}, ("live",)),
        ({"shadows": ["linucb", "linucb"]}, ("shadows",)),
        ({"default_reward": 2}, ("default_reward",)),
        ({"reward_window_s": -1}, ("reward_window_s",)),
    ],
)
def test_absurd_values_are_refused_naming_the_field(
    store: StateStore, change: dict, field: tuple[str, ...]
) -> None:
    svc = make_service(store)
    svc.configure({"live": "egreedy-v1"})
    before = store.config()
    with pytest.raises(ValidationError) as refused:
        svc.configure(change)
    locs = [tuple(str(p) for p in e["loc"]) for e in refused.value.errors()]
    assert any(loc[: len(field)] == field for loc in locs), locs
    assert store.config() == before  # nothing written


def test_each_policy_decides_with_its_own_stored_settings_and_logs_them(
    store: StateStore,
) -> None:
    svc = make_service(store)
    svc.configure(
        {
            "live": "egreedy-v1",
            "shadows": ["egreedy-v2", "linucb"],
            "policies": {"egreedy-v1": {"epsilon": 1.0}, "egreedy-v2": {"epsilon": 0.3}},
        }
    )
    record = svc.decide("u1", MOMENT, CANDIDATES)
    settings = {d.policy: d.settings for d in (record.decision, *record.shadows)}
    assert settings["egreedy-v1"] == PolicyConfig(epsilon=1.0)
    assert settings["egreedy-v2"] == PolicyConfig(epsilon=0.3)
    assert settings["linucb"] == PolicyConfig()
    probabilities = [c.probability for c in record.decision.candidates]
    assert probabilities == pytest.approx([1 / 3] * 3)  # ε = 1: uniform
    (logged,) = store.decisions()
    assert logged.record.decision.settings == PolicyConfig(epsilon=1.0)
    assert {s.policy: s.settings for s in logged.record.shadows} == {
        "egreedy-v2": PolicyConfig(epsilon=0.3),
        "linucb": PolicyConfig(),
    }


def test_another_replica_sees_a_change_at_once(state_url: str) -> None:
    stores = [open_store(state_url) for _ in range(2)]
    try:
        a, b = (make_service(s) for s in stores)
        a.configure({"live": "egreedy-v2", "policies": {"egreedy-v2": {"seed": 7}}})
        record = b.decide("u1", MOMENT, CANDIDATES)
        assert record.decision.policy == "egreedy-v2" and record.decision.settings is not None
        assert record.decision.settings.seed == 7
    finally:
        for s in stores:
            s.close()


def test_concurrent_partial_changes_both_hold(state_url: str) -> None:
    """Two replicas changing different fields at once: neither change is lost."""
    stores = [open_store(state_url) for _ in range(4)]
    try:
        services: list[PolicyService] = [make_service(s) for s in stores]
        services[0].configure({"live": "egreedy-v1"})

        def change(i: int) -> None:
            name = ("egreedy-v1", "egreedy-v2", "linucb", "egreedy-v1")[i]
            field = ("epsilon", "epsilon", "alpha", "seed")[i]
            value = (0.2, 0.3, 2.0, 5)[i]
            services[i].configure({"policies": {name: {field: value}}})

        threads = [threading.Thread(target=change, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        config = services[1].serving_config()
        assert config.settings("egreedy-v1") == PolicyConfig(epsilon=0.2, seed=5)
        assert config.settings("egreedy-v2").epsilon == 0.3
        assert config.settings("linucb").alpha == 2.0
    finally:
        for s in stores:
            s.close()


def test_merge_replaces_what_the_change_names() -> None:
    base = {"live": "a", "shadows": ["b"], "policies": {"x": {"epsilon": 0.2, "seed": 1}}}
    merged = merge(base, {"policies": {"x": {"seed": 2}, "y": {"alpha": 3}}, "shadows": []})
    assert merged == {
        "live": "a",
        "shadows": [],
        "policies": {"x": {"epsilon": 0.2, "seed": 2}, "y": {"alpha": 3}},
    }
    assert json.dumps(merged)  # stays a JSON document
