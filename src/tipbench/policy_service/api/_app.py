"""The policy service's HTTP API (`tipbench policy serve`): every route behind a scoped token.

Three routers, each mounted with its scope (`_scopes`): the serving routes
(`_decisions`), the admin routes (`_admin`) and the monitoring routes
(`_health`). A request with a body is authenticated before its body is read, and bodies
are capped (`tipbench._asgi.RequestGuard`). Bad input gets 422 naming the field, an unknown
policy or decision 404, a second reward 409, a store that cannot answer in time 503 (with
`Retry-After`); a refused request writes nothing. There is no `/docs` page (it would load
Swagger UI from a CDN): `/openapi.json`, behind the serving token, declares the bearer scheme.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.routing import Match
from starlette.types import Scope

from tipbench._asgi import RequestGuard
from tipbench._redact import redact_text
from tipbench.policy_service._service import PolicyService
from tipbench.policy_service.api import _admin, _decisions, _health
from tipbench.policy_service.api._metrics import ServiceMetrics
from tipbench.policy_service.api._requests import RequestObserver
from tipbench.policy_service.api._scopes import UNAUTHENTICATED, authenticate, require
from tipbench.policy_service.api._settings import PolicyServerSettings
from tipbench.policy_service.api._sweeper import Sweeper
from tipbench.policy_service.store._store import StoreUnavailable

_log = logging.getLogger("tipbench.policy_service")


def create_app(
    service: PolicyService,
    settings: PolicyServerSettings | None = None,
    sweeper: Sweeper | None = None,
) -> FastAPI:
    """The FastAPI app of `tipbench policy serve`, over a service (and its store); /metrics
    counts what `sweeper` (the process's expiry and retention sweep) settles.

    Raises:
        ConfigError: if no valid serving token is configured, or the tokens are misconfigured.
    """
    settings = settings or PolicyServerSettings()
    settings.tokens  # noqa: B018 - refuse to start without valid tokens

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.store.close()

    app = FastAPI(
        title="tipbench policy service",
        version="1",
        description="Contextual-bandit tip selection with a decision log. Every route needs "
        "`Authorization: Bearer <token>`: the serving token (`TIPBENCH_POLICY_TOKEN`), the "
        "admin token (`TIPBENCH_POLICY_ADMIN_TOKEN`) for reset and roles, or the monitor "
        "token (`TIPBENCH_POLICY_MONITOR_TOKEN`) for /metrics, /ready and /ping only.",
        docs_url=None,  # Swagger UI would load its assets from a CDN: /openapi.json only
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.service = service
    app.state.metrics = metrics = ServiceMetrics()
    if sweeper is not None:
        metrics.follow(sweeper)
    # Middleware added last runs first: the observer sees every request, refused ones too.
    app.add_middleware(
        RequestGuard,
        authenticate=authenticate,
        max_body_bytes=settings.policy_max_body_bytes,
        unauthenticated_detail=UNAUTHENTICATED,
    )
    app.add_middleware(RequestObserver, metrics=metrics, route_of=lambda s: route_of(app, s))
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StoreUnavailable, _store_unavailable)  # type: ignore[arg-type]
    app.include_router(_decisions.router, dependencies=[Depends(require("serve"))])
    app.include_router(_admin.router, dependencies=[Depends(require("admin"))])
    app.include_router(_health.router, dependencies=[Depends(require("monitor"))])

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require("serve"))])
    def openapi() -> dict[str, Any]:
        return app.openapi()

    return app


def route_of(app: FastAPI, scope: Scope) -> str:
    """The path template of the route `scope` goes to (`other` for none): a metric's label."""
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is not Match.NONE:
            return str(getattr(route, "path", "other"))
    return "other"


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 naming each bad field; the offending input is not echoed (it may be NaN or huge)."""
    errors = [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_ENTITY)


async def _store_unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
    """503 with `Retry-After`: the store is stopped, unreachable or locked past its timeout."""
    reason = redact_text(str(exc))
    _log.warning("state store unavailable: %s", reason)
    request.app.state.metrics.store_errors.labels(route_of(request.app, request.scope)).inc()
    return JSONResponse(
        {"detail": f"the state store cannot answer now: {reason}"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "1"},
    )
