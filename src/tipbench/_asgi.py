"""The guard in front of every app tipbench serves: authenticate before a body is read, and
never hold more than a bounded body in memory.

FastAPI parses a request's body before it runs the route's dependencies, so a dependency
alone cannot refuse an unauthenticated 50 MB body before it has been read and parsed.
`RequestGuard` is a pure ASGI middleware that sits in front of the routes:

    app.add_middleware(RequestGuard, authenticate=is_admin, max_body_bytes=1 << 20,
                       public_paths={"/login"})

- A request that may carry a body (any method but GET, HEAD and OPTIONS, or a declared
  body) on a path outside `public_paths` must pass `authenticate` first; else it gets a 401
  and its body is never read. Bodiless requests go on to the routes, whose own dependencies
  decide (a page may redirect to its login form instead of answering 401).
- Every body, public paths included, is read here up to `max_body_bytes` and then handed on;
  a larger one gets a 413 as soon as its declared length or its bytes so far exceed the cap.

`authenticate` sees the connection (headers, cookies, and `scope["session"]` when a session
middleware is added after this one, which makes it the outer layer). It must not read the body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Authenticate = Callable[[HTTPConnection], Awaitable[bool]]

#: Request bodies larger than this are refused with 413 unless an app sets its own cap.
DEFAULT_MAX_BODY_BYTES = 1 << 20
_BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RequestGuard:
    """Pure ASGI middleware: auth before body, bounded bodies (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Authenticate,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        public_paths: Collection[str] = (),
        unauthenticated_detail: str = "authentication required",
    ) -> None:
        if max_body_bytes < 0:
            raise ValueError("max_body_bytes must be >= 0")
        self.app = app
        self.authenticate = authenticate
        self.max_body_bytes = max_body_bytes
        self.public_paths = frozenset(public_paths)
        self.unauthenticated_detail = unauthenticated_detail

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        declared = _declared_length(connection)
        may_have_body = scope["method"] not in _BODILESS_METHODS or declared != 0
        if (
            may_have_body
            and scope["path"] not in self.public_paths
            and not await self.authenticate(connection)
        ):
            challenge = {"WWW-Authenticate": "Bearer"}
            await _refuse(scope, receive, send, 401, self.unauthenticated_detail, challenge)
            return
        if declared is not None and declared > self.max_body_bytes:
            await _refuse(scope, receive, send, 413, self._too_large)
            return
        if not may_have_body:
            await self.app(scope, receive, send)
            return
        body = await self._read_body(receive)
        if body is None:
            await _refuse(scope, receive, send, 413, self._too_large)
            return
        await self.app(scope, _replay(body, receive), send)

    @property
    def _too_large(self) -> str:
        return f"request body larger than {self.max_body_bytes} bytes"

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it passes the cap."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _declared_length(connection: HTTPConnection) -> int | None:
    """The Content-Length, 0 when there is no body at all, None when it comes chunked."""
    value = connection.headers.get("content-length")
    if value is not None:
        return int(value) if value.isdigit() else None
    return None if "transfer-encoding" in connection.headers else 0


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then waits for disconnect."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status_code: int,
    detail: str,
    headers: dict[str, str] | None = None,
) -> None:
    # Connection: close, because the unread body cannot be left on a kept-alive connection.
    headers = {**(headers or {}), "Connection": "close"}
    response = JSONResponse({"detail": detail}, status_code=status_code, headers=headers)
    await response(scope, receive, send)
