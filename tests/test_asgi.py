"""The request guard every tipbench app sits behind: auth before body, bounded bodies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import Message, Receive, Scope, Send

from tipbench._asgi import RequestGuard

TOKEN = "Bearer good-token"


async def _authenticate(connection: HTTPConnection) -> bool:
    return connection.headers.get("authorization") == TOKEN


class Echo:
    """An app that reads the whole body and answers with its length."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


def _call(
    method: str,
    path: str,
    chunks: list[bytes],
    headers: dict[str, str],
    max_body_bytes: int = 100,
) -> tuple[int, Any, int, Echo]:
    """Drive the guard; return the status, the answer, the chunks read and the app."""
    app = Echo()
    guard = RequestGuard(
        app, authenticate=_authenticate, max_body_bytes=max_body_bytes, public_paths={"/login"}
    )
    scope: Scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "query_string": b"",
    }
    read = 0
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal read
        read += 1
        if read <= len(chunks):
            return {
                "type": "http.request",
                "body": chunks[read - 1],
                "more_body": read < len(chunks),
            }
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    answer = json.loads(body) if status != 200 else int(body)
    return status, answer, read, app


def test_an_unauthenticated_body_is_refused_unread() -> None:
    status, answer, read, app = _call("POST", "/api/run", [b"x" * 50], {"content-length": "50"})
    assert (status, answer, read, app.calls) == (401, {"detail": "authentication required"}, 0, 0)


def test_an_unauthenticated_oversized_body_gets_401_not_413() -> None:
    status, _, read, _ = _call("POST", "/api/run", [b"x"], {"content-length": "999999999"})
    assert (status, read) == (401, 0)


def test_a_declared_oversized_body_is_refused_unread() -> None:
    status, answer, read, app = _call(
        "POST", "/api/run", [b"x" * 200], {"content-length": "200", "authorization": TOKEN}
    )
    assert (status, read, app.calls) == (413, 0, 0)
    assert answer == {"detail": "request body larger than 100 bytes"}


def test_a_chunked_body_is_cut_off_once_past_the_cap() -> None:
    chunks = [b"x" * 60, b"x" * 60, b"x" * 60]
    status, _, read, app = _call(
        "POST", "/api/run", chunks, {"transfer-encoding": "chunked", "authorization": TOKEN}
    )
    assert (status, read, app.calls) == (413, 2, 0)


def test_an_authenticated_body_within_the_cap_reaches_the_app_whole() -> None:
    chunks = [b"x" * 40, b"x" * 40]
    status, answer, _, _ = _call(
        "POST", "/api/run", chunks, {"transfer-encoding": "chunked", "authorization": TOKEN}
    )
    assert (status, answer) == (200, 80)


def test_public_paths_take_bodies_without_auth_but_within_the_cap() -> None:
    assert _call("POST", "/login", [b"x" * 10], {"content-length": "10"})[:2] == (200, 10)
    assert _call("POST", "/login", [b"x" * 101], {"content-length": "101"})[0] == 413


def test_bodiless_requests_go_on_to_the_routes_to_decide() -> None:
    status, answer, _, app = _call("GET", "/bench", [], {})
    assert (status, answer, app.calls) == (200, 0, 1)
