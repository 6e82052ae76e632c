"""Every request gets an id: in the `X-Request-ID` response header and in every log line
written while it is answered, with one access line per request and its latency counted.

A client may send its own `X-Request-ID` (1–64 characters of `A-Z a-z 0-9 . _ : -`) to
follow a request across services; any other value is replaced by a fresh one. Log lines read

    2026-11-23 21:40:01,123 INFO 9f2c…e1 tipbench.policy_service.access: POST /serve 200 3.2 ms

The access line has the path only (never a query string). An unexpected error is logged with
its traceback and the request id, and answered 500 with the id (no detail of the error).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tipbench.policy_service.api._metrics import ServiceMetrics

REQUEST_ID_HEADER = "X-Request-ID"
ACCESS_LOGGER = "tipbench.policy_service.access"
LOG_FORMAT = "%(asctime)s %(levelname)s %(request_id)s %(name)s: %(message)s"
_CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

#: The id of the request being answered ("-" outside a request).
request_id: ContextVar[str] = ContextVar("tipbench_policy_request_id", default="-")
_access = logging.getLogger(ACCESS_LOGGER)
_errors = logging.getLogger("tipbench.policy_service")


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record (for the format's `%(request_id)s`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class RequestObserver:
    """Pure ASGI middleware, outermost: the request id, the access line, the latency."""

    def __init__(
        self, app: ASGIApp, *, metrics: ServiceMetrics, route_of: Callable[[Scope], str]
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.route_of = route_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _header(scope, b"x-request-id")
        rid = incoming if incoming and _CLIENT_ID.fullmatch(incoming) else uuid.uuid4().hex
        token = request_id.set(rid)
        status, responded = 500, False
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status, responded = message["status"], True
                MutableHeaders(scope=message).append(REQUEST_ID_HEADER, rid)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            _errors.exception("unexpected error answering %s %s", scope["method"], scope["path"])
            if not responded:
                body = {"detail": "internal error", "request_id": rid}
                await JSONResponse(body, status_code=500)(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            self.metrics.answered(self.route_of(scope), scope["method"], status, seconds)
            _access.info("%s %s %d %.1f ms", scope["method"], scope["path"], status, seconds * 1000)
            request_id.reset(token)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def log_config(level: str = "info") -> dict[str, Any]:
    """uvicorn's `log_config`: every line on stderr with the request id; uvicorn's own access
    log off (the service writes its own, with the id and the latency)."""
    handler = {
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
        "formatter": "line",
        "filters": ["request_id"],
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"line": {"format": LOG_FORMAT}},
        "handlers": {"stderr": handler},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "tipbench": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
        },
    }
