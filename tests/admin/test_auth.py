"""Every route of the admin app refuses without a valid token or session (walked, not listed)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Mount, Route

from tipbench import ConfigError
from tipbench._tokens import token_matches
from tipbench.admin import ServerSettings, create_app
from tipbench.admin._pages import STATIC_DIR

TOKEN = "test-admin-token-0123456789"
OTHER = "second-admin-token-9876543210"
# The login page itself, and the site's icon (browsers ask for it on the login page too).
PUBLIC = {("GET", "/login"), ("POST", "/login"), ("GET", "/favicon.ico")}
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


OVERSIZED = b'{"models": "' + b"x" * (2 * 1024 * 1024) + b'"}'
MALFORMED = {
    "nested": b"[" * 200_000,
    "not json": b"\xff\xfe{models",
    "nan": b'{"temperature": NaN, "n_tips": 1e309}',
    "form": b"csrf_token=" + b"%" * 10_000,
}


def streamed(body: bytes) -> Iterator[bytes]:
    """The body as a stream: sent chunked, with no Content-Length to go by."""
    for start in range(0, len(body), 64 * 1024):
        yield body[start : start + 64 * 1024]


def test_every_route_refuses_oversized_and_malformed_bodies_without_credentials(
    client: TestClient,
) -> None:
    walked = [(m, p) for m, p in routes(client) if (m, p) not in PUBLIC]
    for method, path in walked:
        for name, body in {"oversized": OVERSIZED, **MALFORMED}.items():
            for content_type in ("application/json", "application/x-www-form-urlencoded"):
                response = client.request(
                    method, path, content=body, headers={"Content-Type": content_type}
                )
                assert response.status_code == 401, (method, path, name, content_type)
        chunked = client.request(method, path, content=streamed(OVERSIZED))
        assert chunked.status_code == 401, (method, path, "chunked")
        wrong = client.request(
            method, path, content=OVERSIZED, headers={"Authorization": "Bearer wrong-token-xyz"}
        )
        assert refused(wrong.status_code, wrong.headers.get("location")), (method, path)


def test_bodies_are_capped_for_admins_and_on_the_login_page(client: TestClient) -> None:
    admin = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    assert client.post("/api/bench/run", content=OVERSIZED, headers=admin).status_code == 413
    streamed_run = client.post("/api/bench/run", content=streamed(OVERSIZED), headers=admin)
    assert streamed_run.status_code == 413
    assert client.post("/login", content=OVERSIZED).status_code == 413
    for name, body in MALFORMED.items():  # refused for what they are, never a 500
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        assert client.post("/login", content=body, headers=form).status_code < 500, name
        answer = client.post("/api/bench/run", content=body, headers=admin)
        assert answer.status_code in (400, 422), (name, answer.text)


def test_the_icon_is_public_and_tells_nothing(client: TestClient) -> None:
    """Every page links /favicon.ico, the login page included: it answers without a
    session (no 404 in any tab), the same constant SVG for everyone."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.content == (STATIC_DIR / "favicon.svg").read_bytes()
    assert response.content.startswith(b"<svg") and b"<script" not in response.content
    page = client.get("/login")
    assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in page.text


def test_swagger_ui_is_not_served_and_no_page_loads_anything_from_elsewhere(
    client: TestClient,
) -> None:
    admin = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/docs", headers=admin).status_code == 404
    pages = [p for m, p in routes(client) if m == "GET" and not p.startswith(("/api/", "/static/"))]
    pages += [f"/static/{file.name}" for file in STATIC_DIR.iterdir()]
    for path in pages:
        response = client.get(path, headers=admin)
        assert response.status_code == 200, path
        # No absolute or protocol-relative URL to another origin, in markup, script or style.
        assert not re.search(
            r"""(src|href|url|import)\s*[=(]\s*["']?(https?:)?//""", response.text
        ), path
        if response.headers.get("content-type", "").startswith("text/html"):
            policy = response.headers["content-security-policy"]
            assert "default-src 'self'" in policy and "http" not in policy, path


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
