"""`tipbench airflow install-dags`: the two-line shim that enables the DAGs in a dags folder."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench.orchestration._store import LOCAL_EXECUTORS

SHIM_NAME = "tipbench_dags.py"
SHIM = (
    '"""Airflow DAGs bench_collect, bench_judged, policy_simulate and prompt_optimize, shipped '
    'in the tipbench package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n"
    "from tipbench.orchestration.policy_dags import policy_simulate  # noqa: F401\n"
    "from tipbench.orchestration.optimize_dags import prompt_optimize  # noqa: F401\n"
)
# Shims earlier versions wrote: replaced without --force (they are tipbench's own).
_EARLIER_SHIMS = (
    '"""Airflow DAGs bench_collect, bench_judged and policy_simulate, shipped in the tipbench '
    'package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n"
    "from tipbench.orchestration.policy_dags import policy_simulate  # noqa: F401\n",
    '"""Airflow DAGs bench_collect and bench_judged, shipped in the tipbench package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n",
)


def install_dags(folder: Path, *, force: bool = False) -> Path:
    """Write the shim into an Airflow dags folder (created if missing); return its path.

    Re-installing is a no-op; a different file of the same name is kept unless `force`.

    Raises:
        ConfigError: if the folder cannot be written, or holds another file of that name.
    """
    path = folder / SHIM_NAME
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == SHIM:
            return path
        if path.exists() and not force and path.read_text(encoding="utf-8") not in _EARLIER_SHIMS:
            raise ConfigError(f"{path} exists and is not tipbench's shim (--force replaces it)")
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: the dag processor never parses half a file.
        fd, tmp = tempfile.mkstemp(prefix=".tipbench-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(SHIM)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def is_worker_without_database() -> bool:
    """Whether this machine is a worker with no metadata database: its executor runs tasks
    on several machines (Celery, Kubernetes) and its `[database] sql_alchemy_conn` is a
    SQLite file that `airflow db migrate` never made (missing, or without Airflow's tables:
    a worker opens it empty when it starts). Such a worker reaches Airflow through the
    execution API only, so `airflow dags …` commands cannot work there. False where Airflow
    is not installed (nothing can be told).
    """
    try:
        from airflow.configuration import conf
    except ImportError:
        return False
    executors = str(conf.get("core", "executor", fallback="LocalExecutor"))
    names = [name.strip().rsplit(".", 1)[-1].rsplit(":", 1)[-1] for name in executors.split(",")]
    if all(name in LOCAL_EXECUTORS for name in names if name):
        return False
    url = str(conf.get("database", "sql_alchemy_conn", fallback=""))
    if not url.startswith("sqlite:"):
        return False
    from sqlalchemy.engine import make_url

    database = make_url(url).database
    return not database or database == ":memory:" or not _has_airflow_tables(Path(database))


def _has_airflow_tables(path: Path) -> bool:
    """Whether the SQLite file at `path` holds Airflow's tables (opened read-only)."""
    if not path.is_file():
        return False
    try:
        read_only = f"{path.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(read_only, uri=True)) as db:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'dag_run'").fetchone()
    except sqlite3.Error:
        return False
    return found is not None
