"""The policy service over HTTP: `tipbench policy serve` as a real subprocess on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.policy_server import TOKEN, PolicyServer
from tipbench.policies import reward_of

pytestmark = pytest.mark.slow

REQUEST: dict[str, Any] = {
    "user_id": "u1",
    "context": {
        "local_hour": 8,
        "weekday": 1,
        "open_tasks": 3,
        "minutes_to_deadline": 600,
        "tips_today": 0,
    },
    "candidates": [
        {"tip_id": "t1", "category": "focus"},
        {"tip_id": "t2", "category": "break"},
        {"tip_id": "t3", "category": "planning"},
    ],
    "profile_features": None,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyServer]:
    workdir = tmp_path_factory.mktemp("policy-serve")
    state = f"sqlite:///{workdir / 'state.sqlite'}"
    with PolicyServer(
        workdir, state, "--live", "egreedy-v2", "--shadows", "linucb,egreedy-v1"
    ) as s:
        yield s  # type: ignore[misc]


@pytest.fixture
def client(server: PolicyServer) -> Iterator[httpx.Client]:
    """The admin client (every scope), on a fresh state with the module's roles."""
    with server.admin_client() as c:
        assert c.post("/reset", json={"scope": "all"}).status_code == 200
        c.put("/config", json={"live": "egreedy-v2", "shadows": ["linucb", "egreedy-v1"]})
        yield c


def with_(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `base` with the value at dotted `path` replaced (or removed)."""
    body = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    node: Any = body
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _MISSING:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return body


_MISSING = object()


def test_serve_reward_stats_contract(client: httpx.Client) -> None:
    served = client.post("/serve", json=REQUEST)
    assert served.status_code == 200, served.text
    body = served.json()
    assert body["policy"] == "egreedy-v2" and body["tip_id"] in {"t1", "t2", "t3"}
    assert set(body["scores"]) == {"t1", "t2", "t3"}
    assert body["propensity"] == body["probabilities"][body["tip_id"]] > 0
    assert set(body["shadows"]) == {"linucb", "egreedy-v1"}
    for shadow in body["shadows"].values():
        assert shadow["propensity"] == shadow["probabilities"][shadow["tip_id"]] > 0

    reward = {
        "decision_id": body["decision_id"],
        "reward": 1.0,
        "event": "completed",
        "dwell_s": 42.0,
    }
    assert client.post("/reward/egreedy-v2", json=reward).status_code == 200
    again = client.post("/reward/egreedy-v2", json={**reward, "reward": 0.0})
    assert again.status_code == 409
    stats = client.get("/stats/egreedy-v2").json()
    assert stats["role"] == "live" and stats["decisions"] == 1 and stats["rewards"] == 1
    assert stats["mean_reward"] == 1.0 and stats["events"] == {"completed": 1}
    assert len(stats["features"]) == 12
    shadow = client.get("/stats/linucb").json()
    assert shadow["role"] == "shadow" and shadow["shadow_decisions"] == 1 and shadow["rewards"] == 0
    wrong = client.post("/reward/linucb", json=reward)  # a shadow's reward comes with the live's
    assert wrong.status_code == 409 and "made by 'egreedy-v2'" in wrong.json()["detail"]

    scored = client.post("/score/egreedy-v1", json=REQUEST).json()
    assert scored["policy"] == "egreedy-v1" and "shadows" not in scored
    assert client.get("/stats/egreedy-v1").json()["decisions"] == 1


def test_sources_are_served_and_counted_per_source(client: httpx.Client) -> None:
    """A candidate's provenance (item 1 of issue 49): served as usual, counted by source in
    `/stats` and `/stats/{policy}`; candidates without one are 'unknown source'."""
    sources = [
        {"model": "llamacpp:smollm2-135m", "prompt_version": "v2-mentor",
         "experiment": "tip-bench-auto", "run_id": "0f3c2a9d", "tip_index": 1},
        {"model": "llamacpp:smollm2-135m", "prompt_version": "v1"},
        None,
    ]  # fmt: skip
    body = json.loads(json.dumps(REQUEST))
    for candidate, source in zip(body["candidates"], sources, strict=True):
        if source is not None:
            candidate["source"] = source
    served = [client.post("/serve", json=body).json() for _ in range(12)]
    for decision in served[:6]:
        reward = {"decision_id": decision["decision_id"], "event": "completed"}
        assert client.post("/reward", json=reward).status_code == 200
    names = {"t1": "llamacpp:smollm2-135m|v2-mentor", "t2": "llamacpp:smollm2-135m|v1",
             "t3": "unknown source"}  # fmt: skip
    expected: dict[str, list[int]] = {}
    for i, decision in enumerate(served):
        counted = expected.setdefault(names[decision["tip_id"]], [0, 0])
        counted[0] += 1
        counted[1] += i < 6
    for stats in (client.get("/stats").json(), client.get("/stats/egreedy-v2").json()):
        shown = {k: [s["decisions"], s["rewards"]] for k, s in stats["sources"].items()}
        assert shown == expected
    for key, figures in client.get("/stats").json()["sources"].items():
        if key == "unknown source":
            assert (figures["model"], figures["prompt_version"]) == (None, None)
        else:
            assert f"{figures['model']}|{figures['prompt_version']}" == key
            assert figures["mean_reward"] == (1.0 if expected[key][1] else None)


def test_roles_change_without_restart(client: httpx.Client) -> None:
    changed = client.put("/config", json={"live": "linucb", "shadows": []})
    assert (changed.json()["live"], changed.json()["shadows"]) == ("linucb", [])
    assert client.post("/serve", json=REQUEST).json()["policy"] == "linucb"
    everything = client.get("/stats").json()
    assert everything["live"] == "linucb" and everything["shadows"] == []
    assert everything["policies"]["egreedy-v2"]["role"] == "off"
    bad = client.put("/config", json={"live": "linucb", "shadows": ["linucb"]})
    assert bad.status_code == 422 and client.get("/config").json()["live"] == "linucb"


BAD_DECISIONS = [
    ("candidates.1.category", "nap", "candidates.1.category"),
    ("candidates", [], "candidates"),
    ("candidates.1.tip_id", "t1", "candidates"),
    ("context.local_hour", 24, "context.local_hour"),
    ("context.weekday", 7, "context.weekday"),
    ("context.open_tasks", -1, "context.open_tasks"),
    ("user_id", "", "user_id"),
    ("context.tips_today", "many", "context.tips_today"),
    ("profile_features", {"completion_rate": 2, "dismiss_rate": 0, "mean_dwell_s": 0,
                          "tips_seen": 0}, "profile_features.completion_rate"),
    ("context", _MISSING, "context"),
    ("candidates.0.source", {"model": "m|x", "prompt_version": "v1"}, "candidates.0.source.model"),
    ("candidates.0.source", {"prompt_version": "V 1"}, "candidates.0.source.prompt_version"),
    ("candidates.0.source", {"tip_index": 2}, "candidates.0.source.tip_index"),
    ("candidates.0.source", {"run_id": "r1", "tip_index": -1}, "candidates.0.source.tip_index"),
    ("candidates.0.source", {"cell": "x"}, "candidates.0.source.cell"),
    ("candidates.0.source", {"run_id": "r\u00e9"}, "candidates.0.source.run_id"),
]  # fmt: skip


def counts(client: httpx.Client) -> dict[str, tuple[int, int, int]]:
    stats = client.get("/stats").json()["policies"]
    return {p: (s["decisions"], s["rewards"], s["shadow_decisions"]) for p, s in stats.items()}


@pytest.mark.parametrize(("path", "value", "field"), BAD_DECISIONS)
def test_bad_decisions_are_refused_naming_the_field(
    client: httpx.Client, path: str, value: Any, field: str
) -> None:
    before = counts(client)
    for route in ("/serve", "/score/linucb"):
        response = client.post(route, json=with_(REQUEST, path, value))
        assert response.status_code == 422, (route, response.text)
        locs = [".".join(str(p) for p in e["loc"][1:]) for e in response.json()["detail"]]
        assert field in locs, locs
    assert counts(client) == before


def test_bad_rewards_are_refused_and_write_nothing(client: httpx.Client) -> None:
    decision = client.post("/serve", json=REQUEST).json()["decision_id"]
    good = {"decision_id": decision, "reward": 0.5, "event": "viewed", "dwell_s": 3.0}
    before = counts(client)
    for field, value, status in [
        ("reward", 1.5, 422),
        ("reward", -0.1, 422),
        ("reward", "NaN", 422),
        ("event", "clicked", 422),
        ("dwell_s", -1, 422),
        ("decision_id", "no-such-decision", 404),
    ]:
        response = client.post("/reward/egreedy-v2", json={**good, field: value})
        assert response.status_code == status, (field, response.text)
        if status == 422:
            assert field in [e["loc"][-1] for e in response.json()["detail"]]
    raw_nan = b'{"decision_id": "%s", "reward": NaN, "event": "viewed"}' % decision.encode()
    response = client.post(
        "/reward/egreedy-v2", content=raw_nan, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert client.post("/reward/no-such-policy", json=good).status_code == 404
    assert client.post("/score/no-such-policy", json=REQUEST).status_code == 404
    assert counts(client) == before
    assert client.post("/reward/egreedy-v2", json=good).status_code == 200


def test_reset_scopes_over_http(client: httpx.Client) -> None:
    for user in ("u1", "u2"):
        client.post("/serve", json={**REQUEST, "user_id": user})
    assert client.post("/reset", json={"scope": "policy"}).status_code == 422
    assert client.post("/reset", json={"scope": "user"}).status_code == 422
    assert client.post("/reset", json={"scope": "policy", "policy": "nope"}).status_code == 422
    assert client.post("/reset", json={"scope": "user", "user_id": "u1"}).status_code == 200
    assert client.get("/stats/egreedy-v2").json()["decisions"] == 1
    assert (
        client.post("/reset", json={"scope": "policy", "policy": "egreedy-v2"}).status_code == 200
    )
    assert client.get("/stats/egreedy-v2").json()["decisions"] == 0


def test_every_route_refuses_a_request_without_the_token(server: PolicyServer) -> None:
    with server.client() as client:
        document = client.get("/openapi.json").json()
    walked = [
        (method.upper(), path.replace("{policy}", "egreedy-v1"))
        for path, item in document["paths"].items()
        for method in item
    ]
    walked += [("GET", "/openapi.json")]
    assert ("POST", "/serve") in walked and ("POST", "/reset") in walked and len(walked) >= 10
    for token in (None, "wrong-token-of-enough-length", TOKEN + "x"):
        with server.client(token) as anonymous:
            for method, path in walked:
                response = anonymous.request(method, path, json=REQUEST)
                assert response.status_code == 401, (token, method, path)
                assert "decision_id" not in response.text
    with server.client() as client:
        assert client.get("/stats/egreedy-v1").json()["decisions"] == 0  # nothing was decided


def test_bodies_are_bounded_and_checked_after_auth(server: PolicyServer) -> None:
    huge = {**REQUEST, "user_id": "u" * 200_000}
    with server.client() as client:
        assert client.post("/serve", json=huge).status_code == 413
    with server.client(None) as anonymous:
        assert anonymous.post("/serve", json=huge).status_code == 401


def test_token_is_required_to_start(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "TIPBENCH_HOME": str(tmp_path)}
    import os

    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "serve", "--port", "0"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "no service token: set TIPBENCH_POLICY_TOKEN" in result.stderr
    env["TIPBENCH_POLICY_TOKEN"] = env["TIPBENCH_ADMIN_TOKEN"] = "the-same-token-for-both"
    result = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "serve", "--port", "0"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "must differ from the admin token" in result.stderr


@pytest.mark.parametrize(
    ("event", "dwell_s", "expected"),
    [("completed", None, 1.0), ("dismissed", 5.0, 0.0), ("viewed", 30.0, 0.25)],
)
def test_a_reward_left_out_is_the_events_as_the_simulator_maps_it(
    client: httpx.Client, event: str, dwell_s: float | None, expected: float
) -> None:
    decision = client.post("/serve", json=REQUEST).json()["decision_id"]
    body = {"decision_id": decision, "event": event, "dwell_s": dwell_s}
    answer = client.post("/reward", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["reward"] == expected == reward_of(event, dwell_s)
    assert client.post("/reward", json=body).json()["reward"] == expected  # a retry: the same
