"""The policy service's settings, from the environment (`TIPBENCH_POLICY_*`): its tokens, one
per scope (never the bench server's admin token), and the limits of its HTTP server."""

from __future__ import annotations

import contextlib
import os
from functools import cached_property
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from tipbench._errors import ConfigError
from tipbench._tokens import read_tokens
from tipbench.policy_service.api._scopes import ScopedTokens

#: The variables of the bench server's admin token, which the policy service never accepts.
BENCH_ADMIN_TOKEN = "TIPBENCH_ADMIN_TOKEN"


class PolicyServerSettings(BaseSettings):
    """From the environment:

    - `TIPBENCH_POLICY_TOKEN` (comma-separated for several) or `TIPBENCH_POLICY_TOKEN_FILE`:
      the serving token (serve, score, reward, stats), required;
    - `TIPBENCH_POLICY_ADMIN_TOKEN` or `..._ADMIN_TOKEN_FILE`: the admin scope (reset, roles,
      settings), optional: without it those routes answer 403;
    - `TIPBENCH_POLICY_MONITOR_TOKEN` or `..._MONITOR_TOKEN_FILE`: only /metrics, /ready and
      /ping (for Prometheus and health probes), optional;
    - limits: `TIPBENCH_POLICY_MAX_BODY_BYTES`, `..._READY_TIMEOUT_S`, `..._HEADER_TIMEOUT_S`,
      `..._KEEP_ALIVE_S`, `..._MAX_HEADER_BYTES`, `..._MAX_CONNECTIONS`.
    """

    model_config = SettingsConfigDict(env_prefix="TIPBENCH_", extra="ignore")

    policy_token: SecretStr | None = None
    policy_token_file: Path | None = None
    policy_admin_token: SecretStr | None = None
    policy_admin_token_file: Path | None = None
    policy_monitor_token: SecretStr | None = None
    policy_monitor_token_file: Path | None = None
    policy_max_body_bytes: int = Field(default=64 * 1024, gt=0)
    # /ready answers 503 when the store cannot be read and written within this
    policy_ready_timeout_s: float = Field(default=1.0, gt=0, le=60)
    # A connection must have sent a request's headers within this, or it is closed
    policy_header_timeout_s: float = Field(default=10.0, gt=0, le=300)
    policy_keep_alive_s: int = Field(default=5, ge=1, le=300)  # idle between requests
    policy_max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1024 * 1024)
    # Connections open at once; beyond, new ones are closed and requests get 503
    policy_max_connections: int = Field(default=512, ge=2, le=100_000)

    @cached_property
    def tokens(self) -> ScopedTokens:
        """Every scope's tokens, checked: at least one serving token, each at least 16
        characters, no token in two scopes, none the bench server's admin token.

        Raises:
            ConfigError: a token is missing, too short, shared, or unreadable from its file.
        """
        serve = read_tokens(
            self.policy_token,
            self.policy_token_file,
            kind="service",
            variable="TIPBENCH_POLICY_TOKEN",
        )
        admin = _optional(self.policy_admin_token, self.policy_admin_token_file, "admin")
        monitor = _optional(self.policy_monitor_token, self.policy_monitor_token_file, "monitor")
        scopes = {
            "TIPBENCH_POLICY_TOKEN": serve,
            "TIPBENCH_POLICY_ADMIN_TOKEN": admin,
            "TIPBENCH_POLICY_MONITOR_TOKEN": monitor,
        }
        bench = bench_admin_tokens()
        for variable, tokens in scopes.items():
            if bench & set(tokens):
                raise ConfigError(
                    f"{variable}: the policy service's tokens must differ from the admin token "
                    f"of the bench server ({BENCH_ADMIN_TOKEN} or {BENCH_ADMIN_TOKEN}_FILE)"
                )
        names = list(scopes)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                if set(scopes[first]) & set(scopes[second]):
                    raise ConfigError(f"{first} and {second} must differ: one token per scope")
        return ScopedTokens(serve=serve, admin=admin, monitor=monitor)


def _optional(value: SecretStr | None, file: Path | None, scope: str) -> tuple[str, ...]:
    """The tokens of an optional scope: none unless its variable (non-empty) or file is set."""
    if (value is None or not value.get_secret_value().strip()) and file is None:
        return ()
    variable = f"TIPBENCH_POLICY_{scope.upper()}_TOKEN"
    return read_tokens(value, file, kind=f"policy {scope}", variable=variable)


def bench_admin_tokens() -> set[str]:
    """The bench server's admin tokens, from its variable and its file, as far as this
    process can read them (a file it cannot read holds no token it could be handed)."""
    raw = os.environ.get(BENCH_ADMIN_TOKEN, "")
    file = os.environ.get(f"{BENCH_ADMIN_TOKEN}_FILE")
    if file:
        with contextlib.suppress(OSError):
            raw += "," + Path(file).read_text(encoding="utf-8").replace("\n", ",")
    return {t.strip() for t in raw.split(",") if t.strip()}
