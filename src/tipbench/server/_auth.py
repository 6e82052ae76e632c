"""Admin auth: a bearer token, or a session cookie from the login page, on every route.

Tokens are compared in constant time. A page session carries a CSRF token that every
state-changing request authenticated by the cookie must echo (form field `csrf_token` or
header `X-CSRF-Token`); bearer requests carry no ambient credentials and need none.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_KEY = "admin"
CSRF_KEY = "csrf"


def token_matches(candidate: str, tokens: tuple[str, ...]) -> bool:
    """Whether `candidate` is one of `tokens`, without leaking which or how much matched."""
    found = False
    for token in tokens:  # every token is compared, so timing tells nothing
        found |= hmac.compare_digest(candidate.encode(), token.encode())
    return found


def start_session(request: Request) -> str:
    """Mark the session as an admin's and give it a fresh CSRF token."""
    request.session.clear()
    request.session[SESSION_KEY] = True
    request.session[CSRF_KEY] = secrets.token_urlsafe(32)
    return str(request.session[CSRF_KEY])


def csrf_token(request: Request) -> str:
    return str(request.session.get(CSRF_KEY, ""))


class NotAuthenticated(HTTPException):
    def __init__(self) -> None:
        super().__init__(
            status.HTTP_401_UNAUTHORIZED,
            "admin authentication required",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def require_admin(request: Request) -> str:
    """The dependency every route but the login page is mounted with.

    Returns how the request authenticated: "bearer" or "session".
    """
    tokens: tuple[str, ...] = request.app.state.settings.tokens
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    if scheme.lower() == "bearer" and credential:
        if token_matches(credential.strip(), tokens):
            return "bearer"
        raise NotAuthenticated()
    if "session" in request.scope and request.session.get(SESSION_KEY):
        if request.method not in SAFE_METHODS:
            await _check_csrf(request)
        return "session"
    raise NotAuthenticated()


async def _check_csrf(request: Request) -> None:
    sent = request.headers.get("x-csrf-token", "")
    if not sent and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        sent = str((await request.form()).get("csrf_token", ""))
    expected = csrf_token(request)
    if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "missing or wrong CSRF token")


Admin = Annotated[str, Depends(require_admin)]
