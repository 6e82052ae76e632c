"""Choosing a state store from `--state-url`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tipbench._errors import ConfigError
from tipbench._redact import redact_uri
from tipbench.policy_service.store._store import STORE_TIMEOUT_S, StateStore
from tipbench.tracking import data_dir

STATE_FILE = "policy-state.sqlite"


def default_state_url() -> str:
    """The embedded default: a SQLite file in `$TIPBENCH_HOME`."""
    return f"sqlite:///{data_dir() / STATE_FILE}"


def open_store(
    url: str | None = None,
    *,
    create: bool = True,
    timeout_s: float = STORE_TIMEOUT_S,
    exclusive: bool = False,
) -> StateStore:
    """`sqlite:///PATH` (default: under $TIPBENCH_HOME) or `postgresql://...` (replicas).

    `create=False` (every command but `policy serve`) refuses a store that does not exist
    yet, rather than creating an empty one at a mistyped URL. `timeout_s` bounds every
    statement and lock wait. `exclusive` (a serving process) refuses a SQLite file that
    another process serves.

    Raises:
        ConfigError: an unsupported URL, no store there and `create` is false, or a SQLite
            state another process serves.
        StoreUnavailable: the store cannot be reached.
    """
    url = url or default_state_url()
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from tipbench.policy_service.store._sqlite import SqliteStore

        path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
        if not path:
            raise ConfigError(f"state URL {redact_uri(url)!r}: use sqlite:///PATH")
        if not create and not Path(path).expanduser().is_file():
            raise _no_store(url)
        return SqliteStore(Path(path).expanduser(), timeout_s=timeout_s, exclusive=exclusive)
    if scheme in ("postgresql", "postgres"):
        from tipbench.policy_service.store._postgres import PostgresStore

        store = PostgresStore(url, timeout_s=timeout_s, create=create)
        if store.empty:
            store.close()
            raise _no_store(url)
        return store
    raise ConfigError(
        f"state URL {redact_uri(url)!r}: expected sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def _no_store(url: str) -> ConfigError:
    return ConfigError(
        f"no policy state at {redact_uri(url)} (a mistyped --state-url?): "
        "`tipbench policy serve` creates it"
    )
