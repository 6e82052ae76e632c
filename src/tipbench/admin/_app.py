"""The admin app: API routers and pages, every route behind admin auth."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.middleware.sessions import SessionMiddleware

from tipbench._asgi import RequestGuard
from tipbench._errors import ConfigError, TipbenchError, TrackingError
from tipbench._redact import redact_text
from tipbench.admin import (
    _api_bench,
    _api_jobs,
    _api_judging,
    _api_online,
    _api_optimize,
    _api_policies,
    _pages,
    _pages_optimize,
    _pages_policies,
)
from tipbench.admin._auth import Backoff, authenticate, require_admin
from tipbench.admin._pages import LOGIN_PATH
from tipbench.admin._sessions import SessionStore
from tipbench.admin._settings import ServerSettings

SESSION_COOKIE = "tipbench_session"


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The FastAPI app of `tipbench serve`.

    Raises:
        ConfigError: if no admin token is configured.
    """
    settings = settings or ServerSettings()
    settings.tokens  # noqa: B018 - refuse to start without tokens
    app = FastAPI(
        title="tipbench admin API",
        version="1",
        docs_url=None,  # Swagger UI would load its assets from a CDN: /openapi.json only
        redoc_url=None,
        openapi_url=None,
        lifespan=_api_jobs.lifespan,  # the job runner
    )
    app.state.settings = settings
    app.state.sessions = SessionStore(
        settings.sessions_db, settings.session_secret.get_secret_value(), settings.session_max_age_s
    )
    app.state.backoff = Backoff()
    # Middleware added last runs first: the session is decoded before the guard checks
    # the credentials, and the guard refuses unauthenticated or oversized bodies unread.
    app.add_middleware(
        RequestGuard,
        authenticate=authenticate,
        max_body_bytes=settings.max_body_bytes,
        public_paths={LOGIN_PATH},
        unauthenticated_detail="admin authentication required",
    )
    app.add_middleware(
        SessionMiddleware,
        secret_key=settings.session_secret.get_secret_value(),
        session_cookie=SESSION_COOKIE,
        max_age=settings.session_max_age_s,
        same_site="strict",
        https_only=settings.secure_cookies,
    )
    admin = [Depends(require_admin)]
    app.include_router(_api_bench.router, dependencies=admin)
    app.include_router(_api_online.router, dependencies=admin)
    app.include_router(_api_judging.router, dependencies=admin)
    app.include_router(_api_jobs.router, dependencies=admin)
    app.include_router(_api_policies.router, dependencies=admin)
    app.include_router(_api_optimize.router, dependencies=admin)
    app.include_router(_pages.router)  # applies the admin dependency itself, but on /login
    app.include_router(_pages_policies.router)  # the Policies page, behind the same dependency
    app.include_router(_pages_optimize.router)  # the Optimize page, likewise

    @app.get("/openapi.json", include_in_schema=False, dependencies=admin)
    def openapi() -> dict[str, Any]:
        return app.openapi()

    @app.exception_handler(TipbenchError)
    def tipbench_error(request: Request, exc: TipbenchError) -> JSONResponse:
        status = 422 if isinstance(exc, ConfigError) else 500
        if isinstance(exc, TrackingError):
            status = 404 if "no experiment" in str(exc) else 503
        return JSONResponse({"detail": redact_text(str(exc))}, status_code=status)

    @app.exception_handler(RequestValidationError)
    def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": [_shown(error) for error in exc.errors()]}, 422)

    return app


def _shown(error: Any) -> dict[str, Any]:
    """A validation error without the input it refused: an error body never echoes a
    token, nor a value JSON cannot carry (NaN)."""
    return {"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]}
