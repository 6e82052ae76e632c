"""Pipeline jobs and their state, in an embedded SQLite database.

A job is one `tipbench run` with a validated `RunRequest`, one `tipbench policy simulate`
with a `SimulationJobRequest` (its config has `kind: policy-simulation`), or one `tipbench
optimize` with an `OptimizationJobRequest` (`kind: optimization`). Its life:

    queued ──▶ running ──▶ succeeded | failed | cancelled | interrupted
      │                                  │          │            │
      └──▶ cancelled          resume ◀───┴──────────┴────────────┘ (back to queued)

`interrupted` means the server stopped while the job ran. Resuming runs the same config
again; the pipeline skips what is already recorded, so nothing is duplicated.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from tipbench._errors import TipbenchError
from tipbench.admin._optimize_jobs import OPTIMIZATION_JOB, OptimizationJobRequest
from tipbench.admin._policy_jobs import SIMULATION_JOB, SimulationJobRequest
from tipbench.pipeline import RunRequest
from tipbench.tracking import private_dir

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]
JOB_STATES: tuple[JobState, ...] = get_args(JobState)
RESUMABLE: frozenset[JobState] = frozenset({"failed", "cancelled", "interrupted"})
FINISHED: frozenset[JobState] = frozenset({"succeeded", *RESUMABLE})

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ({", ".join(repr(s) for s in JOB_STATES)})),
    phase TEXT,
    cells_done INTEGER NOT NULL DEFAULT 0,
    cells_total INTEGER NOT NULL DEFAULT 0,
    judged INTEGER NOT NULL DEFAULT 0,
    judge_total INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    exit_code INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    queued_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    pid INTEGER,
    log_path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, queued_at);
"""
# Columns added since the first schema (added to older databases when they are opened):
# jobs that run on Airflow record their DAG run, its page, and mapped collect tasks done.
_ADDED_COLUMNS = {
    "dag_run_id": "TEXT",
    "remote_url": "TEXT",
    "models_done": "INTEGER NOT NULL DEFAULT 0",
    "models_total": "INTEGER NOT NULL DEFAULT 0",
    "judge_loading": "TEXT",  # the judge model while it loads, before its first candidate
}


JobRequest = RunRequest | SimulationJobRequest | OptimizationJobRequest


def job_request(config: dict[str, Any]) -> JobRequest:
    """A stored job's request, by its kind (raises pydantic's ValidationError if invalid)."""
    if config.get("kind") == SIMULATION_JOB:
        return SimulationJobRequest.model_validate(config)
    if config.get("kind") == OPTIMIZATION_JOB:
        return OptimizationJobRequest.model_validate(config)
    return RunRequest.model_validate(config)


class JobError(TipbenchError):
    """A job request that cannot be honoured."""


class JobNotFound(JobError):
    """No job has this id."""


class JobConflict(JobError):
    """The job is not in a state that allows this (e.g. resuming a succeeded job)."""


@dataclass(frozen=True)
class Progress:
    """How far a running job is: grid cells (collect), then candidates (automatic judge);
    for a job on Airflow, its mapped collect tasks (one per model) done and in all."""

    phase: str | None = None
    cells_done: int = 0
    cells_total: int = 0
    judged: int = 0
    judge_total: int = 0
    models_done: int = 0
    models_total: int = 0
    judge_loading: str | None = None  # the judge model while it loads (and reads the rubric)


@dataclass(frozen=True)
class Job:
    """One row of the jobs table."""

    id: str
    config: dict[str, Any]
    state: JobState
    progress: Progress
    error: str | None
    exit_code: int | None
    attempts: int
    created_at: str
    queued_at: str
    started_at: str | None
    finished_at: str | None
    pid: int | None
    log_path: Path
    dag_run_id: str | None = None  # the job runs on Airflow as this run of bench_collect
    remote_url: str | None = None  # that run's page in Airflow's UI

    @property
    def experiment(self) -> str:
        return str(self.config.get("experiment", ""))

    @property
    def events_path(self) -> Path:
        """Where its runs write their progress events: beside the log, `<id>.events.jsonl`."""
        return self.log_path.with_suffix(".events.jsonl")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class JobStore:
    """The jobs table: every change is one short transaction, safe from any thread.

    Each call opens its own connection (SQLite in WAL mode), so the API's worker threads and
    the runner's thread never share one.
    """

    def __init__(self, path: Path, log_dir: Path) -> None:
        self.path = path
        self.log_dir = log_dir
        private_dir(path.parent)
        private_dir(log_dir)
        path.touch(mode=0o600, exist_ok=True)  # SQLite's -wal and -shm files copy its mode
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            present = {row["name"] for row in db.execute("PRAGMA table_info(jobs)")}
            for column, declaration in _ADDED_COLUMNS.items():
                if column not in present:
                    db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {declaration}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30)) as db, db:
            db.row_factory = sqlite3.Row
            yield db

    def _update(self, job_id: str, sql: str, *args: object, states: frozenset[str]) -> bool:
        """Run `UPDATE jobs SET <sql>` on the job if it is in one of `states`."""
        marks = ", ".join("?" * len(states))
        with self._connect() as db:
            cursor = db.execute(
                f"UPDATE jobs SET {sql} WHERE id = ? AND state IN ({marks})",
                (*args, job_id, *sorted(states)),
            )
            return cursor.rowcount == 1

    def create(
        self, request: JobRequest, *, dag_run_id: str | None = None, remote_url: str | None = None
    ) -> Job:
        """A new queued job for `request`; with `dag_run_id`, a job already running on
        Airflow as that run of bench_collect."""
        job_id = uuid.uuid4().hex
        created = now()
        remote = dag_run_id is not None
        with self._connect() as db:
            db.execute(
                "INSERT INTO jobs (id, config, state, cells_total, created_at, queued_at, "
                "started_at, attempts, log_path, dag_run_id, remote_url) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    request.model_dump_json(),
                    "running" if remote else "queued",
                    request.cell_count(),
                    created,
                    created,
                    created if remote else None,
                    1 if remote else 0,
                    str(self.log_dir / f"{job_id}.log"),
                    dag_run_id,
                    remote_url,
                ),
            )
        return self.get(job_id)

    def restart_remote(self, job_id: str, dag_run_id: str, remote_url: str) -> bool:
        """A stopped Airflow job runs again as a new DAG run (its progress starts over)."""
        return self._update(
            job_id,
            "state = 'running', started_at = ?, finished_at = NULL, attempts = attempts + 1, "
            "phase = NULL, models_done = 0, error = NULL, exit_code = NULL, dag_run_id = ?, "
            "remote_url = ?",
            now(),
            dag_run_id,
            remote_url,
            states=RESUMABLE,
        )

    def remote_running(self) -> list[Job]:
        """The running jobs that run on Airflow."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT * FROM jobs WHERE state = 'running' AND dag_run_id IS NOT NULL"
            ).fetchall()
        return [_job(row) for row in rows]

    def get(self, job_id: str) -> Job:
        """The job with this id.

        Raises:
            JobNotFound: if there is none.
        """
        with self._connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(f"no job {job_id}")
        return _job(row)

    def jobs(self, limit: int = 100) -> list[Job]:
        """The most recent jobs, newest first."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM jobs ORDER BY rowid DESC LIMIT ?", (limit,))
            return [_job(row) for row in rows]

    def queued_count(self) -> int:
        """How many jobs wait in the queue."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM jobs WHERE state = 'queued'").fetchone()[0])

    def next_queued(self) -> Job | None:
        """The job that has waited longest in the queue."""
        with self._connect() as db:
            row = db.execute(
                "SELECT * FROM jobs WHERE state = 'queued' ORDER BY queued_at, rowid LIMIT 1"
            ).fetchone()
        return None if row is None else _job(row)

    def claim(self, job_id: str) -> bool:
        """Mark a queued job running (its progress starts over); False if it is not queued."""
        return self._update(
            job_id,
            "state = 'running', started_at = ?, finished_at = NULL, attempts = attempts + 1, "
            "phase = NULL, cells_done = 0, judged = 0, judge_total = 0, judge_loading = NULL, "
            "error = NULL, exit_code = NULL",
            now(),
            states=frozenset({"queued"}),
        )

    def set_pid(self, job_id: str, pid: int) -> None:
        self._update(job_id, "pid = ?", pid, states=frozenset({"running"}))

    def set_progress(self, job_id: str, progress: Progress) -> None:
        self._update(
            job_id,
            "phase = ?, cells_done = ?, cells_total = ?, judged = ?, judge_total = ?, "
            "models_done = ?, models_total = ?, judge_loading = ?",
            progress.phase,
            progress.cells_done,
            progress.cells_total,
            progress.judged,
            progress.judge_total,
            progress.models_done,
            progress.models_total,
            progress.judge_loading,
            states=frozenset({"running"}),
        )

    def finish(
        self, job_id: str, state: JobState, *, exit_code: int | None, error: str | None
    ) -> bool:
        """Move a running (or queued) job to a final state."""
        return self._update(
            job_id,
            "state = ?, exit_code = ?, error = ?, finished_at = ?, pid = NULL",
            state,
            exit_code,
            error,
            now(),
            states=frozenset({"queued", "running"}),
        )

    def requeue(self, job_id: str) -> Job:
        """Queue a failed, cancelled or interrupted job again, with the same config.

        Raises:
            JobNotFound: if there is no such job.
            JobConflict: if the job is queued, running or succeeded.
        """
        if not self._update(job_id, "state = 'queued', queued_at = ?", now(), states=RESUMABLE):
            state = self.get(job_id).state
            raise JobConflict(
                f"job {job_id} is {state}: only a failed, cancelled or interrupted job resumes"
            )
        return self.get(job_id)

    def interrupt_running(self, reason: str) -> list[Job]:
        """Mark every running job interrupted (the server that ran it is gone); returns them
        as they were, with their process ids."""
        with self._connect() as db:  # jobs on Airflow go on without this server
            rows = db.execute(
                "SELECT * FROM jobs WHERE state = 'running' AND dag_run_id IS NULL"
            ).fetchall()
            db.execute(
                "UPDATE jobs SET state = 'interrupted', error = ?, finished_at = ?, pid = NULL "
                "WHERE state = 'running' AND dag_run_id IS NULL",
                (reason, now()),
            )
        return [_job(row) for row in rows]


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"],
        config=json.loads(row["config"]),
        state=row["state"],
        progress=Progress(
            row["phase"],
            row["cells_done"],
            row["cells_total"],
            row["judged"],
            row["judge_total"],
            row["models_done"],
            row["models_total"],
            row["judge_loading"],
        ),
        error=row["error"],
        exit_code=row["exit_code"],
        attempts=row["attempts"],
        created_at=row["created_at"],
        queued_at=row["queued_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        pid=row["pid"],
        log_path=Path(row["log_path"]),
        dag_run_id=row["dag_run_id"],
        remote_url=row["remote_url"],
    )
