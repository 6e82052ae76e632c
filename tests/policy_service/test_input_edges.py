"""Input at the edges, over HTTP: strict integers, rates that add up, ASCII user, event and
tip ids (erasure still takes the user ids an earlier version admitted, and the tip ids it
logged are still read), unknown policy names cut short in errors; and the original
recommender's paths as aliases of the named policies."""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.policy_server import PolicyServer
from support.policy_state import CANDIDATES, MOMENT, make_service
from tipbench.evaluate import evaluate, traffic_from_rows
from tipbench.policy_service import CandidateTip, decision_rows, open_store

pytestmark = pytest.mark.slow

REQUEST: dict[str, Any] = {
    "user_id": "u1",
    "context": {"local_hour": 8, "weekday": 1, "open_tasks": 3, "tips_today": 0},
    "candidates": [{"tip_id": "t1", "category": "focus"}, {"tip_id": "t2", "category": "break"}],
}
PROFILE = {"completion_rate": 0.5, "dismiss_rate": 0.2, "mean_dwell_s": 30, "tips_seen": 4}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyServer]:
    workdir = tmp_path_factory.mktemp("edges")
    with PolicyServer(workdir, f"sqlite:///{workdir / 'state.sqlite'}") as s:
        yield s


@pytest.fixture
def client(server: PolicyServer) -> Iterator[httpx.Client]:
    with server.admin_client() as c:
        assert c.post("/reset", json={"scope": "all"}).status_code == 200
        yield c


def changed(**context: Any) -> dict[str, Any]:
    body = copy.deepcopy(REQUEST)
    body["context"].update(context)
    return body


@pytest.mark.parametrize(
    ("field", "value"),
    [("weekday", True), ("weekday", "3"), ("weekday", 3.0), ("open_tasks", False),
     ("tips_today", "0"), ("local_hour", "8"), ("local_hour", True)],
)  # fmt: skip
def test_numbers_are_strict(client: httpx.Client, field: str, value: Any) -> None:
    """`weekday: true` and `"3"` were accepted (as 1 and 3)."""
    response = client.post("/serve", json=changed(**{field: value}))
    assert response.status_code == 422, response.text
    assert [e["loc"] for e in response.json()["detail"]] == [["body", "context", field]]
    assert client.get("/stats/egreedy-v1").json()["decisions"] == 0


def test_rates_must_add_up_to_at_most_one(client: httpx.Client) -> None:
    body = {**REQUEST, "profile_features": {**PROFILE, "completion_rate": 0.7, "dismiss_rate": 0.4}}
    response = client.post("/score/egreedy-v2", json=body)
    assert response.status_code == 422
    error = response.json()["detail"][0]
    assert error["loc"] == ["body", "profile_features", "dismiss_rate"]
    assert "completion_rate + dismiss_rate must not exceed 1" in error["msg"]
    body["profile_features"]["dismiss_rate"] = 0.3  # exactly 1: fine
    assert client.post("/score/egreedy-v2", json=body).status_code == 200


LOOK_ALIKES = {
    "zero-width non-joiner": "u\u200c1",
    "zero-width joiner": "u1\u200d",
    "right-to-left mark": "\u200fu1",
    "right-to-left override": "u\u202e1",
    "left-to-right isolate": "\u2066u1\u2069",
    "Arabic letter mark": "u1\u061c",
    "a Cyrillic а": "\u0430lice",
    "composed é": "Amélie",
}


@pytest.mark.parametrize("field", ["user_id", "event_id"])
def test_ids_are_ascii_so_no_user_has_an_invisible_twin(client: httpx.Client, field: str) -> None:
    """`u1` with a zero-width joiner was a second user that erasing `u1` missed."""
    for name, value in LOOK_ALIKES.items():
        response = client.post("/serve", json={**REQUEST, field: value})
        assert response.status_code == 422, name
        assert [e["loc"] for e in response.json()["detail"]] == [["body", field]], name
    for value in ("a b", "a/b", "", "x" * 129, "tab\there"):
        assert client.post("/serve", json={**REQUEST, field: value}).status_code == 422, value
    for value in ("x" * 128, "user@example.org", "team:42_a.b-7"):
        assert client.post("/serve", json={**REQUEST, field: value}).status_code == 200, value
    assert client.get("/stats/egreedy-v1").json()["decisions"] == 3


def test_tip_ids_are_ascii_so_no_tip_has_an_invisible_twin(client: httpx.Client) -> None:
    """`t1` and `t1` with a zero-width joiner were two candidates of one request, which the
    duplicate check let through and the log counted as two tips."""
    twins = {**REQUEST, "candidates": [*REQUEST["candidates"], {"tip_id": "t1\u200d",
                                                                "category": "focus"}]}  # fmt: skip
    response = client.post("/serve", json=twins)
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["detail"]] == [["body", "candidates", 2, "tip_id"]]
    for name, value in LOOK_ALIKES.items():
        body = copy.deepcopy(REQUEST)
        body["candidates"][0]["tip_id"] = value
        response = client.post("/serve", json=body)
        assert response.status_code == 422, name
        assert [e["loc"] for e in response.json()["detail"]] == [
            ["body", "candidates", 0, "tip_id"]
        ], name
    for value in ("x" * 128, "focus-25", "tip:42_a.b@v2"):
        body = copy.deepcopy(REQUEST)
        body["candidates"][0]["tip_id"] = value
        assert client.post("/serve", json=body).status_code == 200, value
    assert client.get("/stats/egreedy-v1").json()["decisions"] == 3


def test_tip_ids_an_earlier_version_logged_are_still_read(tmp_path: Path) -> None:
    """A state holds a decision among tips named `café` and `t1` + a zero-width joiner, logged
    before tip ids were ASCII: it is still rewarded over HTTP, exported and evaluated with
    those ids as they were; only a new request naming them is refused."""
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    old_tips = [CandidateTip("café", "focus"), CandidateTip("t1\u200d", "break")]
    store = open_store(state)
    try:
        made = make_service(store).decide("u1", MOMENT, old_tips)
    finally:
        store.close()
    with PolicyServer(tmp_path, state) as server, server.admin_client() as client:
        reward = {"decision_id": made.id, "reward": 1.0, "event": "completed"}
        assert client.post("/reward", json=reward).status_code == 200
        assert client.get("/stats/egreedy-v1").json()["rewards"] == 1
        body = {**REQUEST, "candidates": [{"tip_id": "café", "category": "focus"}]}
        assert client.post("/serve", json=body).status_code == 422
    store = open_store(state, create=False)
    try:
        (row,) = decision_rows(store)
        traffic = traffic_from_rows(decision_rows(store))
    finally:
        store.close()
    assert [c["tip_id"] for c in row["candidates"]] == ["café", "t1\u200d"]
    assert row["tip_id"] == made.decision.tip_id and row["reward"] == 1.0
    observed = evaluate(traffic, [], live="egreedy-v1").observed
    assert [(o.policy, o.decisions, o.value.value) for o in observed] == [("egreedy-v1", 1, 1.0)]


def test_a_user_an_earlier_version_admitted_can_still_be_erased(tmp_path: Path) -> None:
    """A state holds the decisions of `Amélie`, admitted before ids were ASCII: `/reset`
    takes her id, in either Unicode form, and erases her."""
    state = f"sqlite:///{tmp_path / 'state.sqlite'}"
    store = open_store(state)
    try:
        make_service(store).decide("Amélie", MOMENT, CANDIDATES)
    finally:
        store.close()
    with PolicyServer(tmp_path, state) as server, server.admin_client() as admin:
        assert admin.get("/stats/egreedy-v1").json()["decisions"] == 1
        decomposed = unicodedata.normalize("NFD", "Amélie")
        erased = admin.post("/reset", json={"scope": "user", "user_id": decomposed})
        assert erased.status_code == 200 and erased.json()["user_id"] == "Amélie"
        assert admin.get("/stats/egreedy-v1").json()["decisions"] == 0
        refused = admin.post("/reset", json={"scope": "user", "user_id": "a b"})
        assert refused.status_code == 422


def test_an_unknown_policy_name_is_cut_short_in_the_error(client: httpx.Client) -> None:
    name = "no-such-policy-" + "x" * 5000
    for method, path, body in [("POST", f"/score/{name}", REQUEST), ("GET", f"/stats/{name}", None),
                               ("POST", f"/reward/{name}", {"decision_id": "d", "reward": 1,
                                                            "event": "viewed"})]:  # fmt: skip
        response = client.request(method, path, json=body)
        assert response.status_code == 404, path[:20]
        detail = response.json()["detail"]
        assert detail.startswith("unknown policy 'no-such-policy-xxx") and len(detail) < 200


def test_the_original_recommenders_paths_are_aliases(client: httpx.Client) -> None:
    for version in ("v1", "v2"):
        policy = f"egreedy-{version}"
        scored = client.post(f"/score/egreedy/{version}", json=REQUEST)
        assert scored.status_code == 200 and scored.json()["policy"] == policy
        reward = {"decision_id": scored.json()["decision_id"], "reward": 1.0, "event": "completed"}
        assert client.post(f"/reward/egreedy/{version}", json=reward).status_code == 200
        stats = client.get(f"/stats/egreedy/{version}").json()
        assert stats == client.get(f"/stats/{policy}").json()
        assert stats["policy"] == policy and stats["decisions"] == stats["rewards"] == 1
    other = client.post("/score/egreedy/v1", json=REQUEST).json()["decision_id"]
    wrong = {"decision_id": other, "reward": 1.0, "event": "completed"}
    assert client.post("/reward/egreedy/v2", json=wrong).status_code == 409  # v1's decision
    assert client.get("/stats/egreedy/v3").status_code == 404
    with httpx.Client(base_url=str(client.base_url)) as anonymous:
        assert anonymous.get("/stats/egreedy/v2").status_code == 401
