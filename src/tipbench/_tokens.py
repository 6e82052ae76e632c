"""Bearer tokens of the apps tipbench serves: read from the environment, compared safely.

The admin server and the policy service each take tokens from a variable (comma-separated
for several) and/or a file of one token per line; neither ever comes from the repository.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from pydantic import SecretStr

from tipbench._errors import ConfigError

MIN_TOKEN_CHARS = 16


def read_tokens(
    value: SecretStr | None, file: Path | None, *, kind: str, variable: str
) -> tuple[str, ...]:
    """The tokens of `variable` and `variable`_FILE: at least one, each long enough.

    Raises:
        ConfigError: none is configured, the file cannot be read, or a token is too short.
    """
    raw = value.get_secret_value() if value else ""
    if file is not None:
        try:
            raw += "," + file.read_text(encoding="utf-8").replace("\n", ",")
        except OSError as exc:
            raise ConfigError(f"{file}: {exc.strerror}") from None
    tokens = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not tokens:
        raise ConfigError(
            f"no {kind} token: set {variable} (comma-separated for several) or {variable}_FILE"
        )
    if any(len(t) < MIN_TOKEN_CHARS for t in tokens):
        raise ConfigError(f"{kind} tokens must be at least {MIN_TOKEN_CHARS} characters long")
    return tokens


def token_matches(candidate: str, tokens: tuple[str, ...]) -> bool:
    """Whether `candidate` is one of `tokens`, without leaking which or how much matched."""
    found = False
    for token in tokens:  # every token is compared, so timing tells nothing
        found |= hmac.compare_digest(candidate.encode(), token.encode())
    return found
