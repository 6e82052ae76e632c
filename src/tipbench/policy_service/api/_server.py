"""The policy service's HTTP server: uvicorn with limits, so that clients that connect and
never finish a request cannot exhaust it.

uvicorn times out idle keep-alive connections, but not a connection that sends nothing, or
a request's headers a byte at a time: a thousand such connections hold a thousand sockets.
`LimitedHttpProtocol` wraps uvicorn's HTTP protocol (httptools, else h11) with:

- a **header deadline**: a connection that has not sent a whole request head within
  `TIPBENCH_POLICY_HEADER_TIMEOUT_S` (10 s) of connecting, or of starting its next request,
  is closed;
- a **header size cap**: a request head larger than `TIPBENCH_POLICY_MAX_HEADER_BYTES`
  (16 KiB) gets 431 and the connection is closed;
- a **connection cap**: beyond `TIPBENCH_POLICY_MAX_CONNECTIONS` (512) open connections, a new
  one is closed at once; requests beyond it get uvicorn's 503 (`limit_concurrency`).

Idle keep-alive connections close after `TIPBENCH_POLICY_KEEP_ALIVE_S` (5 s).
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn

from tipbench.policy_service.api._requests import log_config
from tipbench.policy_service.api._settings import PolicyServerSettings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _BaseProtocol
except ImportError:  # httptools is optional in uvicorn: its pure-Python protocol then
    from uvicorn.protocols.http.h11_impl import H11Protocol as _BaseProtocol  # type: ignore[assignment]

_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-length: 0\r\nconnection: close\r\n\r\n"
)


class LimitedConfig(uvicorn.Config):
    """uvicorn's config with the limits `LimitedHttpProtocol` reads."""

    def __init__(self, app: Any, settings: PolicyServerSettings, **kwargs: Any) -> None:
        self.header_timeout_s = settings.policy_header_timeout_s
        self.max_header_bytes = settings.policy_max_header_bytes
        self.max_connections = settings.policy_max_connections
        super().__init__(
            app,
            http=LimitedHttpProtocol,
            timeout_keep_alive=settings.policy_keep_alive_s,
            limit_concurrency=settings.policy_max_connections,
            h11_max_incomplete_event_size=settings.policy_max_header_bytes,
            timeout_graceful_shutdown=10,
            **kwargs,
        )


class LimitedHttpProtocol(_BaseProtocol):
    """uvicorn's HTTP protocol with a header deadline, a header size cap and a connection cap."""

    config: LimitedConfig
    _deadline: asyncio.TimerHandle | None = None
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.config.max_connections:
            transport.close()
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._in_request():
            self._cancel_deadline()
            self._head_bytes = 0
            return
        self._head_bytes += len(data)  # a request head still incomplete
        if self._head_bytes > self.config.max_header_bytes:
            self.transport.write(_HEADERS_TOO_LARGE)
            self.transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _in_request(self) -> bool:
        """Whether a request head has arrived whose response is not complete yet."""
        return self.cycle is not None and not self.cycle.response_complete

    def _await_head(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.config.header_timeout_s, self._expire)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self._in_request() and not self.transport.is_closing():
            self.transport.close()


def serve(app: Any, settings: PolicyServerSettings, host: str, port: int, log_level: str) -> bool:
    """Serve `app` until stopped (SIGINT, SIGTERM); whether the server started at all."""
    config = LimitedConfig(
        app,
        settings,
        host=host,
        port=port,
        workers=1,
        access_log=False,  # the service logs its own access lines, with the request id
        log_config=log_config(log_level),
    )
    server = uvicorn.Server(config)
    server.run()
    return server.started
