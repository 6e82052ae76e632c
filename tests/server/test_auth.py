"""Every route of the admin app refuses without a valid token or session (walked, not listed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Mount, Route

from tipbench import ConfigError
from tipbench.server import ServerSettings, create_app
from tipbench.server._auth import token_matches

TOKEN = "test-admin-token-0123456789"
OTHER = "second-admin-token-9876543210"
PUBLIC = {("GET", "/login"), ("POST", "/login")}  # the login page itself
PARAMS = {"experiment": "tip-bench-auth", "job_id": "0" * 32, "path": "app.css"}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TestClient:
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN", f"{TOKEN},{OTHER}")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    return TestClient(create_app(), follow_redirects=False)


def routes(client: TestClient) -> list[tuple[str, str]]:
    """(method, concrete path) for every route the app serves, mounted apps too."""
    return list(_walk(client.app.routes, ""))  # type: ignore[attr-defined]


def _walk(routes: list[BaseRoute], prefix: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for route in routes:
        if isinstance(route, Mount):
            inner = route.routes
            found += _walk(inner, prefix + route.path) if inner else []
            found.append(("GET", prefix + route.path + "/" + PARAMS["path"]))
        elif isinstance(route, Route):
            path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: PARAMS.get(m.group(1), "x"), route.path)
            methods = sorted(route.methods or ())
            found += [(method, prefix + path) for method in methods if method != "HEAD"]
    return found


def refused(response_status: int, location: str | None) -> bool:
    """401, 429 (a client backing off after wrong tokens) or a redirect to the login page."""
    return response_status in (401, 429) or (response_status == 303 and location == "/login")


def test_every_route_refuses_without_credentials(client: TestClient) -> None:
    walked = [(m, p) for m, p in routes(client) if (m, p) not in PUBLIC]
    assert ("GET", "/api/bench/experiments") in walked and ("GET", "/openapi.json") in walked
    for method, path in walked:
        response = client.request(method, path)
        assert refused(response.status_code, response.headers.get("location")), (method, path)
        wrong = client.request(method, path, headers={"Authorization": "Bearer wrong-token-xyz"})
        assert refused(wrong.status_code, wrong.headers.get("location")), (method, path)


def test_every_token_is_accepted(client: TestClient) -> None:
    for token in (TOKEN, OTHER):
        response = client.get(
            "/api/bench/experiments", headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200
    assert client.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()["paths"]


def test_path_parameters_cannot_reach_outside_their_experiment(client: TestClient) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for name in ("..%2F..%2Fetc", "mlflow-internal", "tip-bench-..", "Default"):
        response = client.get(f"/api/bench/runs/{name}", headers=headers)
        assert response.status_code in (404, 422), name


def test_token_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIPBENCH_ADMIN_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="no admin token"):
        create_app(ServerSettings())
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN", "short")
    with pytest.raises(ConfigError, match="at least 16"):
        create_app(ServerSettings())
    monkeypatch.delenv("TIPBENCH_ADMIN_TOKEN")
    token_file = tmp_path / "tokens"
    token_file.write_text(f"{TOKEN}\n{OTHER}\n")
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN_FILE", str(token_file))
    assert ServerSettings().tokens == (TOKEN, OTHER)


def test_token_comparison() -> None:
    assert token_matches(TOKEN, (OTHER, TOKEN))
    assert not token_matches(TOKEN[:-1], (TOKEN,))
    assert not token_matches("", (TOKEN,))
