"""The web pages: login, the bench panel and the judging page, rendered from Jinja2 templates.

`/login` and `/favicon.ico` are the routes that answer without auth: the login form (protected
by a CSRF value kept in the signed session cookie before login) and the site's icon, which
a browser asks for on every page, the login page included (a constant image: it tells
nothing about the server). Every other page and `/static/*` are
mounted with `require_page_admin`, which is `require_admin` with a redirect to the login
page instead of a 401. The pages' scripts call the JSON API with the session cookie and
echo the session's CSRF token (from a meta tag) in `X-CSRF-Token`.
"""

from __future__ import annotations

import functools
import re
import secrets
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from tipbench._errors import TrackingError
from tipbench._tokens import token_matches
from tipbench.admin._api_judging import JUDGE_NAME_MAX
from tipbench.admin._auth import (
    Backoff,
    NotAuthenticated,
    client_of,
    csrf_token,
    end_session,
    has_session,
    require_admin,
    start_session,
)
from tipbench.admin._deps import ExperimentName, Settings, Store
from tipbench.collect import CollectConfig
from tipbench.compare import DEFAULT_MIN_SCENARIOS, LEGEND
from tipbench.pipeline import never_promotes
from tipbench.suite import CRITERIA, FLAGS, levels, levels_text, load_suite

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")


def ident(text: str) -> Markup:
    """An identifier (a model spec, an experiment name) that may wrap after a `:` or a `-`,
    never inside a word: each part on its line, a <wbr> after it (`tipbench.ident` in
    static/api.js builds the same for the scripts' identifiers)."""
    parts = (Markup("<span>{}</span>").format(part) for part in re.split(r"(?<=[:-])", text))
    return Markup('<span class="ident">{}</span>').format(Markup("<wbr>").join(parts))


templates.env.filters["ident"] = ident

LOGIN_PATH = "/login"  # served without auth, with the icon: what a browser needs before login
FAVICON_PATH = "/favicon.ico"
LOGIN_CSRF_KEY = "login_csrf"
NEXT_KEY = "next"
# Where a login may send the browser on: a path of this site, never another origin.
_NEXT_PATTERN = re.compile(r"^/(?![/\\])[A-Za-z0-9/._~-]*$")
_STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
# Scripts and styles come from /static only; the login page, which cannot load /static
# before login, inlines the stylesheet under a per-response nonce.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'nonce-{nonce}'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


async def require_page_admin(request: Request) -> str:
    """`require_admin` for pages: an unauthenticated browser is sent to the login page."""
    try:
        return await require_admin(request)
    except NotAuthenticated:
        page = request.method == "GET" and not request.url.path.startswith("/static/")
        if page and "session" in request.scope:
            request.session[NEXT_KEY] = request.url.path  # where to go once logged in
        raise HTTPException(
            status.HTTP_303_SEE_OTHER, "log in first", headers={"Location": "/login"}
        ) from None


public = APIRouter(include_in_schema=False)
protected = APIRouter(include_in_schema=False, dependencies=[Depends(require_page_admin)])


def _page(
    request: Request, name: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    response = templates.TemplateResponse(
        request,
        name,
        {"csrf_token": csrf_token(request), "nonce": nonce, **context},
        status_code=status_code,
    )
    response.headers.update(_SECURITY_HEADERS)
    response.headers["Content-Security-Policy"] = _CSP.format(nonce=nonce)
    return response


def _safe_next(target: str | None) -> str:
    return target if target and _NEXT_PATTERN.match(target) else "/"


def _login_page(request: Request, next_: str, error: str | None, status_code: int) -> Response:
    """The login form, with a fresh CSRF value for it kept in the (pre-login) session."""
    request.session.clear()
    request.session[LOGIN_CSRF_KEY] = secrets.token_urlsafe(32)
    context = {
        "login_csrf": request.session[LOGIN_CSRF_KEY],
        "next": next_,
        "error": error,
        "stylesheet": (STATIC_DIR / "style.css").read_text(encoding="utf-8"),
    }
    return _page(request, "login.html", context, status_code)


@public.get(LOGIN_PATH)
def login_form(
    request: Request, next_: Annotated[str | None, Query(alias="next")] = None
) -> Response:
    """The form asking for the admin token (the only page served without auth)."""
    next_ = _safe_next(next_ or request.session.get(NEXT_KEY))
    if has_session(request):  # already logged in
        return RedirectResponse(next_, status.HTTP_303_SEE_OTHER)
    return _login_page(request, next_, None, status.HTTP_200_OK)


@public.get(FAVICON_PATH)
def favicon() -> Response:
    """The site's icon (an SVG), for the browser's tab: public, as the login page needs it."""
    return FileResponse(
        STATIC_DIR / "favicon.svg",
        media_type=_STATIC_TYPES[".svg"],
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )


@public.post(LOGIN_PATH)
def login(
    request: Request,
    settings: Settings,
    token: Annotated[str, Form(max_length=4096)] = "",
    csrf_token: Annotated[str, Form(max_length=256)] = "",
    next_: Annotated[str, Form(alias="next", max_length=2048)] = "/",
) -> Response:
    """Check the token; on success start an admin session and go on to `next`."""
    next_ = _safe_next(next_)
    expected = str(request.session.get(LOGIN_CSRF_KEY, ""))
    if not expected or not secrets.compare_digest(csrf_token.encode(), expected.encode()):
        error = "The login form expired or did not come from this site. Please try again."
        return _login_page(request, next_, error, status.HTTP_400_BAD_REQUEST)
    backoff: Backoff = request.app.state.backoff
    client = client_of(request.scope)
    if wait := backoff.retry_after(client):
        error = f"Too many wrong tokens. Try again in {wait} seconds."
        response = _login_page(request, next_, error, status.HTTP_429_TOO_MANY_REQUESTS)
        response.headers["Retry-After"] = str(wait)
        return response
    token = token.strip()
    if not token_matches(token, settings.tokens):
        backoff.failed(client)
        return _login_page(request, next_, "Wrong token.", status.HTTP_401_UNAUTHORIZED)
    backoff.succeeded(client)
    start_session(request, token)
    return RedirectResponse(next_, status.HTTP_303_SEE_OTHER)


@protected.post("/logout")
def logout(request: Request) -> Response:
    """End the session server-side (the form carries the CSRF token, checked by the
    dependency): its cookie, even a copy of it, opens nothing any more."""
    end_session(request)
    return RedirectResponse("/login", status.HTTP_303_SEE_OTHER)


#: The run form's grid: every prompt on as few scenarios as the leaderboard ranks, with
#: fewer tips per cell, finishes in a few minutes on the bundled model (the full grid took
#: about 20); the CLI keeps the full grid, and the form says how many cells it will run.
PANEL_N_SCENARIOS = DEFAULT_MIN_SCENARIOS
PANEL_N_TIPS = 3


@functools.cache
def _bundled_scenarios() -> int:
    """How many scenarios "0 = all" means for the runs the panel starts (the bundled suite)."""
    return len(load_suite().scenarios)


@functools.cache
def _never_promotes() -> dict[int, str]:
    """What `tipbench run` warns for each number of scenarios the form may ask for (0: all)
    whose grid can never promote a prompt: the form says the same beside its size."""
    warnings = {
        n: never_promotes(CollectConfig(n_scenarios=n)) for n in range(_bundled_scenarios() + 1)
    }
    return {n: warning for n, warning in warnings.items() if warning is not None}


@protected.get("/")
def bench_panel(request: Request) -> Response:
    """Experiments, the run form, job progress and the leaderboard."""
    defaults = CollectConfig(n_scenarios=PANEL_N_SCENARIOS, n_tips=PANEL_N_TIPS)
    run_defaults = {
        "models": ",".join(defaults.models),
        "prompts": ",".join(defaults.prompts),
        "n_tips": defaults.n_tips,
        "n_scenarios": defaults.n_scenarios,
        "temperature": defaults.temperature,
        "experiment": defaults.experiment,
        "max_model_b": defaults.max_model_b,
        "ollama_url": defaults.ollama_url,
    }
    context = {
        "run_defaults": run_defaults,
        "all_scenarios": _bundled_scenarios(),
        "never_promotes": _never_promotes(),
        "legend": LEGEND,
    }
    return _page(request, "bench.html", context)


@protected.get("/judge/{experiment}")
def judging_page(request: Request, experiment: ExperimentName, store: Store) -> Response:
    """Pending candidates of `experiment`, one at a time, scored from the keyboard; an
    experiment not collected yet is an empty state that says what to do, asking the API
    nothing (a store that cannot be read is the API's to report)."""
    try:
        exists = store.find_experiment(experiment) is not None
    except TrackingError:
        exists = True
    context = {
        "experiment": experiment,
        "exists": exists,
        "criteria": CRITERIA,
        "flags": FLAGS,
        "levels": levels,  # the rubric's scores per criterion: the buttons and their keys
        "levels_text": levels_text,
        "judge_name_max": JUDGE_NAME_MAX,
    }
    return _page(request, "judge.html", context)


@protected.get("/static/{name}")
def static_file(name: str) -> Response:
    """The pages' scripts and stylesheet: only files shipped in `static/`, by name."""
    path = STATIC_DIR / name
    media_type = _STATIC_TYPES.get(path.suffix)
    if media_type is None or "/" in name or not path.is_file():
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": "no-cache"})


router = APIRouter(include_in_schema=False)
router.include_router(public)
router.include_router(protected)
