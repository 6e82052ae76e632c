"""A new local store, copied from a template: MLflow builds a new SQLite database by running
every one of its migrations (about 1.5 s, most of it CPU that a collect shares with the
model). tipbench builds one template per MLflow version in its data folder and copies it
into each new database (a few milliseconds); the copy is what MLflow would have built, its
`Default` experiment given the time of the copy and its own artifact folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import urlparse

#: Where the templates live, inside tipbench's data folder.
TEMPLATES_DIR = "store-templates"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a local SQLite store URI, else None (a server, `:memory:`)."""
    parsed = urlparse(uri)
    if parsed.scheme != "sqlite" or parsed.path in ("", "/", "/:memory:"):
        return None
    # sqlite:///relative.db has path "/relative.db"; sqlite:////abs.db has "//abs.db"
    return Path(parsed.path[1:])


def is_new(path: Path) -> bool:
    """Whether a database file holds nothing yet (missing or empty: SQLite's new database)."""
    return not path.is_file() or path.stat().st_size == 0


def seed_new_store(path: Path, templates: Path, default_location: str) -> None:
    """Copy this MLflow version's template (built in `templates` on first need) into the
    new database `path`, its `Default` experiment's artifacts at `default_location`.

    Concurrent callers wait for one another, so a database is seeded once.

    Raises:
        OSError, sqlite3.Error: the template could not be built or copied (the database is
            then as it was: MLflow builds it).
    """
    template = build_template(templates)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with open(fd, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # SQLite's own locks are fcntl's: independent
        if held.seek(0, os.SEEK_END) == 0:
            _copy(template, path, default_location)


def _copy(template: Path, path: Path, default_location: str) -> None:
    now = int(time.time() * 1000)
    read_only = f"{template.resolve().as_uri()}?mode=ro"
    with (
        contextlib.closing(sqlite3.connect(read_only, uri=True)) as source,
        contextlib.closing(sqlite3.connect(path)) as target,
    ):
        source.backup(target)  # under SQLite's locks, in one step
        with target:
            target.execute(
                "UPDATE experiments SET artifact_location = ?, creation_time = ?,"
                " last_update_time = ? WHERE experiment_id = 0",
                (default_location, now, now),
            )


def build_template(folder: Path) -> Path:
    """This MLflow version's template in `folder`, built by MLflow on first need."""
    import mlflow
    from mlflow import MlflowClient

    template = folder / f"mlflow-{mlflow.__version__}.db"
    if template.is_file():
        return template
    building = folder / f".{template.name}.{os.getpid()}"
    building.unlink(missing_ok=True)
    MlflowClient(f"sqlite:///{building}").search_experiments(max_results=1)
    building.chmod(0o600)
    os.replace(building, template)  # whole or not at all; a concurrent build is the same
    return template
