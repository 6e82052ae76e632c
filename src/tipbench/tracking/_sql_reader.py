"""Read runs of a local SQLite MLflow store without importing MLflow.

`import mlflow` and MLflow's SQL store take about two seconds before the first query, more
than a small `compare` needs in all; searching 10,000 runs through MLflow builds an ORM
object per param, tag and metric. Reading is three plain queries over MLflow's own tables
(`experiments`, `runs`, `params`, `tags`, `latest_metrics`), answered read-only, with the
same rows `MlflowClient.search_runs` returns: active runs of an active experiment, the
latest value of each metric, newest run first (tests/tracking/test_sql_reader.py checks
this against MLflow on the same store). Writing always goes through MLflow. A database
whose tables are not laid out as expected is not read here: `open_reader` returns None and
MLflow answers.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tipbench.tracking._new_store import is_new, sqlite_path

#: The columns this reads, per table: a store without them is left to MLflow.
_LAYOUT = {
    "experiments": {"experiment_id", "name", "lifecycle_stage"},
    "runs": {"run_uuid", "name", "status", "start_time", "lifecycle_stage", "experiment_id"},
    "params": {"key", "value", "run_uuid"},
    "tags": {"key", "value", "run_uuid"},
    "latest_metrics": {"key", "value", "is_nan", "run_uuid"},
}


@dataclass(frozen=True)
class StoredRun:
    """A run as read back: what tipbench reads of an MLflow run, from either reader."""

    run_id: str
    name: str
    status: str
    start_time: int
    params: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)


class SqliteReader:
    """Read-only queries of one SQLite MLflow database."""

    def __init__(self, path: Path) -> None:
        self._uri = f"{path.resolve().as_uri()}?mode=ro"

    def experiment_id(self, name: str) -> str | None:
        """The id of the active experiment `name` (None: there is none)."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT experiment_id FROM experiments"
                " WHERE name = ? AND lifecycle_stage = 'active'",
                (name,),
            ).fetchall()
        if len(rows) > 1:  # one name in several MLflow workspaces: MLflow knows which
            raise NotReadable
        return str(rows[0][0]) if rows else None

    def runs(
        self,
        experiment_id: str,
        tags: Mapping[str, str],
        params: Mapping[str, str],
        status: str | None = None,
        limit: int | None = None,
    ) -> list[StoredRun]:
        """The experiment's active runs with these tag and param values (and status),
        newest first, as `search_runs` orders them."""
        where = ["r.experiment_id = ?", "r.lifecycle_stage = 'active'"]
        values: list[object] = [int(experiment_id)]
        for table, pairs in (("tags", tags), ("params", params)):
            for key, value in pairs.items():
                where.append(
                    f"EXISTS (SELECT 1 FROM {table} x"
                    " WHERE x.run_uuid = r.run_uuid AND x.key = ? AND x.value = ?)"
                )
                values += [key, value]
        if status is not None:
            where.append("r.status = ?")
            values.append(status)
        query = (
            "SELECT r.run_uuid, r.name, r.status, r.start_time FROM runs r WHERE "
            + " AND ".join(where)
            + " ORDER BY r.start_time DESC, r.run_uuid"
            + (f" LIMIT {int(limit)}" if limit is not None else "")
        )
        with self._connect() as db:
            found = db.execute(query, values).fetchall()
            if not found:
                return []
            db.execute("CREATE TEMP TABLE wanted (run_uuid TEXT PRIMARY KEY)")
            db.executemany("INSERT INTO wanted VALUES (?)", ((row[0],) for row in found))
            params_of = _grouped(db, "params", "value")
            tags_of = _grouped(db, "tags", "value")
            metrics_of: dict[str, dict[str, float]] = {}
            for run_id, key, value, is_nan in db.execute(
                "SELECT m.run_uuid, m.key, m.value, m.is_nan FROM latest_metrics m"
                " JOIN wanted w ON w.run_uuid = m.run_uuid"
            ):
                metrics_of.setdefault(run_id, {})[key] = math.nan if is_nan else float(value)
        return [
            StoredRun(
                run_id=run_id,
                name=name or "",
                status=status_ or "",
                start_time=start_time or 0,
                params=params_of.get(run_id, {}),
                tags=tags_of.get(run_id, {}),
                metrics=metrics_of.get(run_id, {}),
            )
            for run_id, name, status_, start_time in found
        ]

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            with contextlib.closing(sqlite3.connect(self._uri, uri=True, timeout=30)) as db:
                yield db
        except sqlite3.Error as exc:
            raise NotReadable from exc


def _grouped(db: sqlite3.Connection, table: str, column: str) -> dict[str, dict[str, str]]:
    grouped: dict[str, dict[str, str]] = {}
    for run_id, key, value in db.execute(
        f"SELECT x.run_uuid, x.key, x.{column} FROM {table} x"
        " JOIN wanted w ON w.run_uuid = x.run_uuid"
    ):
        grouped.setdefault(run_id, {})[key] = value if value is not None else ""
    return grouped


class NotReadable(Exception):
    """The database cannot be read here (locked for too long, another layout): ask MLflow."""


def open_reader(uri: str) -> SqliteReader | None:
    """A reader for a local SQLite store laid out as MLflow lays it out, else None."""
    path = sqlite_path(uri)
    if path is None or is_new(path):
        return None  # a new store: MLflow creates its tables
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        ) as db:
            for table, columns in _LAYOUT.items():
                present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if not columns <= present:
                    return None
    except sqlite3.Error:
        return None
    return SqliteReader(path)
