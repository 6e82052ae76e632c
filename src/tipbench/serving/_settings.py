"""The policy service's settings: its own service token (never the admin token) and limits."""

from __future__ import annotations

import hmac
import os
from functools import cached_property
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from tipbench._errors import ConfigError

MIN_TOKEN_CHARS = 16


class PolicyServerSettings(BaseSettings):
    """From the environment: `TIPBENCH_POLICY_TOKEN` (one or more, comma-separated) or
    `TIPBENCH_POLICY_TOKEN_FILE`, and `TIPBENCH_POLICY_MAX_BODY_BYTES`."""

    model_config = SettingsConfigDict(env_prefix="TIPBENCH_", extra="ignore")

    policy_token: SecretStr | None = None
    policy_token_file: Path | None = None
    policy_max_body_bytes: int = Field(default=64 * 1024, gt=0)

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        """The service tokens: at least one, each at least 16 characters, none an admin token."""
        raw = self.policy_token.get_secret_value() if self.policy_token else ""
        if self.policy_token_file is not None:
            try:
                raw += "," + self.policy_token_file.read_text(encoding="utf-8").replace("\n", ",")
            except OSError as exc:
                raise ConfigError(f"{self.policy_token_file}: {exc.strerror}") from None
        tokens = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not tokens:
            raise ConfigError(
                "no service token: set TIPBENCH_POLICY_TOKEN (comma-separated for several) "
                "or TIPBENCH_POLICY_TOKEN_FILE"
            )
        if any(len(t) < MIN_TOKEN_CHARS for t in tokens):
            raise ConfigError(f"service tokens must be at least {MIN_TOKEN_CHARS} characters long")
        admin = {t.strip() for t in os.environ.get("TIPBENCH_ADMIN_TOKEN", "").split(",")}
        if admin & set(tokens):
            raise ConfigError("the service token must differ from the admin token")
        return tokens


def token_matches(candidate: str, tokens: tuple[str, ...]) -> bool:
    """Whether `candidate` is one of `tokens`, compared in constant time against every one."""
    found = False
    for token in tokens:
        found |= hmac.compare_digest(candidate.encode(), token.encode())
    return found
