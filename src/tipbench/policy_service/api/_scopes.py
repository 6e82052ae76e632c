"""Scoped tokens: which routes each of the policy service's tokens opens.

| token (variable)                | scopes                | routes                                |
|---------------------------------|-----------------------|---------------------------------------|
| `TIPBENCH_POLICY_TOKEN`         | serve, monitor        | serve, score, reward, stats, config   |
| `TIPBENCH_POLICY_ADMIN_TOKEN`   | admin, serve, monitor | also reset, PUT config, settings      |
| `TIPBENCH_POLICY_MONITOR_TOKEN` | monitor               | /metrics, /ready, /ping only          |

Every route needs one of them: no token (or an unknown one) gets 401, a token without the
route's scope 403. Tokens are compared in constant time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from tipbench._tokens import token_matches

Scope = Literal["serve", "admin", "monitor"]
TOKEN_VARIABLES: dict[Scope, str] = {
    "serve": "TIPBENCH_POLICY_TOKEN",
    "admin": "TIPBENCH_POLICY_ADMIN_TOKEN",
    "monitor": "TIPBENCH_POLICY_MONITOR_TOKEN",
}
_GRANTS: dict[Scope, frozenset[Scope]] = {
    "serve": frozenset({"serve", "monitor"}),
    "admin": frozenset({"admin", "serve", "monitor"}),
    "monitor": frozenset({"monitor"}),
}
UNAUTHENTICATED = "a policy service token is required (Authorization: Bearer TOKEN)"


@dataclass(frozen=True)
class ScopedTokens:
    """The configured tokens of each scope (admin and monitor may have none)."""

    serve: tuple[str, ...]
    admin: tuple[str, ...] = ()
    monitor: tuple[str, ...] = ()

    def scopes(self, credential: str) -> frozenset[Scope]:
        """What `credential` may do: the scopes its token grants (none if it is no token)."""
        granted: frozenset[Scope] = frozenset()
        for scope in ("serve", "admin", "monitor"):  # every set is compared: timing tells nothing
            if token_matches(credential, getattr(self, scope)):
                granted |= _GRANTS[scope]
        return granted


def bearer_credential(connection: HTTPConnection) -> str:
    scheme, _, credential = connection.headers.get("authorization", "").partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else ""


def _tokens(connection: HTTPConnection) -> ScopedTokens:
    tokens: ScopedTokens = connection.app.state.settings.tokens
    return tokens


async def authenticate(connection: HTTPConnection) -> bool:
    """Whether the request carries any of the service's tokens (the body guard's check)."""
    return bool(_tokens(connection).scopes(bearer_credential(connection)))


# Declares the bearer scheme in the OpenAPI document; the check itself is `require`'s.
bearer = HTTPBearer(
    scheme_name="bearer",
    description="A policy service token: " + ", ".join(TOKEN_VARIABLES.values()),
    auto_error=False,
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def require(scope: Scope) -> Callable[[Request, Credentials], Awaitable[None]]:
    """The dependency of the routes of `scope`: 401 without a token, 403 without the scope."""

    async def dependency(request: Request, credentials: Credentials) -> None:
        tokens = _tokens(request)
        granted = tokens.scopes(credentials.credentials) if credentials else frozenset()
        if not granted:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, UNAUTHENTICATED, {"WWW-Authenticate": "Bearer"}
            )
        if scope not in granted:
            variable = TOKEN_VARIABLES[scope]
            missing = "" if getattr(tokens, scope) else f" (none is configured: set {variable})"
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"this route needs the {scope} scope: the token of {variable}{missing}",
            )

    return dependency
