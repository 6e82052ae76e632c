"""What an operator watches: `/metrics` in Prometheus' text format (read with
prometheus-client's own parser), and a request id in every response and log line."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.policy_server import TOKEN, PolicyServer

pytestmark = pytest.mark.slow

REQUEST: dict[str, Any] = {
    "user_id": "u1",
    "context": {"local_hour": 8, "weekday": 1, "open_tasks": 3},
    "candidates": [{"tip_id": "t1", "category": "focus"}, {"tip_id": "t2", "category": "break"}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyServer]:
    workdir = tmp_path_factory.mktemp("observability")
    state = f"sqlite:///{workdir / 'state.sqlite'}"
    options = ("--live", "egreedy-v2", "--shadows", "linucb", "--sweep-interval", "0.2")
    with PolicyServer(workdir, state, *options) as s:
        yield s


def samples(client: httpx.Client) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of /metrics: (name, labels) → value."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:  # fmt: skip
    return found.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_decisions_rewards_latency_and_refusals(server: PolicyServer) -> None:
    with server.client() as client:
        before = samples(client)
        decisions = [client.post("/serve", json=REQUEST).json() for _ in range(3)]
        client.post("/score/egreedy-v1", json=REQUEST)
        for decision, (reward, event) in zip(
            decisions[:2], [(1.0, "completed"), (0.0, "dismissed")], strict=True
        ):
            body = {"decision_id": decision["decision_id"], "reward": reward, "event": event}
            assert client.post("/reward/egreedy-v2", json=body).status_code == 200
            assert client.post("/reward", json=body).status_code == 200  # a retry: counted once
        client.get("/stats/no-such-policy-" + "x" * 500)  # 404: one label, not one per path
        after = samples(client)
    with server.client(None) as anonymous:
        assert anonymous.get("/metrics").status_code == 401  # behind a token like every route

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("tipbench_policy_decisions_total", policy="egreedy-v2", role="live") == 3
    assert delta("tipbench_policy_decisions_total", policy="linucb", role="shadow") == 3
    assert delta("tipbench_policy_decisions_total", policy="egreedy-v1", role="score") == 1
    for role, policy in (("decider", "egreedy-v2"), ("shadow", "linucb")):  # the shadow learns
        rewarded = {"policy": policy, "role": role}
        assert delta("tipbench_policy_rewards_total", **rewarded, event="completed") == 1
        assert delta("tipbench_policy_rewards_total", **rewarded, event="dismissed") == 1
        assert delta("tipbench_policy_reward_value_total", **rewarded) == 1.0
    serve = {"route": "/serve", "method": "POST"}
    assert delta("tipbench_policy_request_duration_seconds_count", **serve) == 3
    assert delta("tipbench_policy_requests_total", **serve, status="200") == 3
    routes = {dict(k[1]).get("route") for k in after if k[0] == "tipbench_policy_requests_total"}
    assert "/stats/{policy}" in routes and "/reward/{policy}" in routes
    assert not any(route and "xxxx" in route for route in routes)
    assert value(after, "process_open_fds") > 0


def test_metrics_count_the_decisions_that_expire(server: PolicyServer) -> None:
    with server.admin_client() as client:
        before = samples(client)
        for _ in range(2):
            client.post("/serve", json=REQUEST)
        assert client.put("/config", json={"reward_window_s": 0.5}).status_code == 200
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                after = samples(client)
                expired = value(after, "tipbench_policy_expired_decisions_total") - value(
                    before, "tipbench_policy_expired_decisions_total"
                )
                if expired >= 2:
                    break
                time.sleep(0.2)
        finally:
            client.put("/config", json={"reward_window_s": None})
    assert expired >= 2
    assert value(after, "tipbench_policy_pruned_decisions_total") == 0


def test_every_response_and_log_line_carries_a_request_id(server: PolicyServer) -> None:
    with server.client() as client:
        first = client.post("/serve", json=REQUEST)
        second = client.post("/serve", json=REQUEST)
        mine = client.get("/stats", headers={"X-Request-ID": "recommender-42:a.b_c"})
        bad = client.get("/stats", headers={"X-Request-ID": "evil id <b>" + "x" * 100})
        refused = client.post("/reset", json={"scope": "all"})  # 403: an id all the same
    ids = [r.headers["X-Request-ID"] for r in (first, second, mine, bad, refused)]
    assert re.fullmatch(r"[0-9a-f]{32}", ids[0]) and ids[0] != ids[1]
    assert ids[2] == "recommender-42:a.b_c"  # a client's own id is kept
    assert "evil" not in ids[3] and re.fullmatch(r"[0-9a-f]{32}", ids[3])
    assert refused.status_code == 403 and ids[4]
    lines = ["POST /serve 200", "POST /serve 200", "GET /stats 200", "GET /stats 200",
             "POST /reset 403"]  # fmt: skip
    access = " {} tipbench.policy_service.access: {}"
    expected = [access.format(rid, line) for rid, line in zip(ids, lines, strict=True)]
    deadline = time.monotonic() + 10  # a line is written once its response has gone out
    while not all(e in server.log_text() for e in expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    log = server.log_text()
    for entry in expected:
        assert entry in log, entry
    assert "evil" not in log


def test_an_unexpected_error_is_logged_and_answered_under_its_request_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """In-process (a fault cannot be injected into the subprocess): a bug in a route is a
    500 with the request id, and its traceback is logged under the same id."""
    from fastapi.testclient import TestClient

    from tipbench.policies import PolicyConfig
    from tipbench.policy_service import PolicyService, create_app, open_store
    from tipbench.policy_service.api._requests import RequestIdFilter
    from tipbench.policy_service.api._settings import PolicyServerSettings
    from tipbench.suite import load_suite

    monkeypatch.setenv("TIPBENCH_POLICY_TOKEN", TOKEN)
    store = open_store(f"sqlite:///{tmp_path / 'state.sqlite'}")

    def broken(policy: str) -> None:
        raise RuntimeError("a bug with secret-ish details")

    monkeypatch.setattr(store, "counts", broken)
    catalogue = load_suite(None).catalogue
    assert catalogue is not None
    app = create_app(PolicyService(store, catalogue, PolicyConfig()), PolicyServerSettings())
    caplog.handler.addFilter(RequestIdFilter())
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        response = client.get("/stats/egreedy-v1")
    rid = response.headers["X-Request-ID"]
    assert response.status_code == 500
    assert response.json() == {"detail": "internal error", "request_id": rid}
    failure = next(r for r in caplog.records if r.levelname == "ERROR")
    assert failure.request_id == rid  # type: ignore[attr-defined]
    assert failure.exc_info and "secret-ish" in str(failure.exc_info[1])
