"""`/api/bench/run` and `/api/bench/jobs`: pipeline jobs, their progress, logs and cancel."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

from tipbench.admin._airflow_jobs import CANCELLING, AirflowJobRunner
from tipbench.admin._deps import Settings
from tipbench.admin._job_runner import JobRunner
from tipbench.admin._jobs import (
    FINISHED,
    RESUMABLE,
    Job,
    JobConflict,
    JobNotFound,
    JobState,
    JobStore,
)
from tipbench.admin._settings import ServerSettings, same_uri
from tipbench.orchestration import AirflowClient, AirflowError, AirflowSettings, AirflowUnavailable
from tipbench.pipeline import RunRequest
from tipbench.tracking import TrackingStore, short_error

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/bench", tags=["jobs"])

#: How long `cancel` waits for a running job to stop before answering.
CANCEL_WAIT_S = 60.0

JobId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="A job id (32 hex digits).")]


AnyRunner = JobRunner | AirflowJobRunner


def runner_for(app: FastAPI) -> AnyRunner:
    """The app's job runner (and its database), made on first use: Airflow's when
    `TIPBENCH_AIRFLOW_URL` is set, else the subprocess runner."""
    runner: AnyRunner | None = getattr(app.state, "jobs", None)
    if runner is None:
        settings: ServerSettings = app.state.settings
        store = JobStore(settings.jobs_db, settings.home / "jobs")
        airflow = AirflowSettings.from_env()
        if airflow is not None:
            runner = AirflowJobRunner(
                store, AirflowClient(airflow), tracking_uri=settings.store_uri
            )
        else:
            runner = JobRunner(
                store,
                home=settings.home,
                tracking_uri=settings.store_uri,
                grace_s=settings.job_grace_s,
            )
        app.state.jobs = runner
    return runner


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Run jobs while the app serves (unless `TIPBENCH_RUN_JOBS=false`)."""
    settings: ServerSettings = app.state.settings
    AirflowSettings.from_env()  # a half-configured Airflow stops the server here, not later
    runner = runner_for(app) if settings.run_jobs else None
    if runner is not None:
        # Set up the store's tables before any job: a job's `tipbench run` and the first API
        # request must not both create a fresh SQLite store at once.
        await run_in_threadpool(_open_store, app)
        runner.start()
    try:
        yield
    finally:
        if runner is not None:
            await run_in_threadpool(runner.stop)


def _open_store(app: FastAPI) -> None:
    try:
        store = app.state.store = TrackingStore(app.state.settings.tracking_uri)
        store.client.search_experiments(max_results=1)
    except Exception as exc:  # a store down now may be up by the first job
        logger.warning("tracking store not ready: %s", short_error(exc))


def get_runner(request: Request) -> AnyRunner:
    return runner_for(request.app)


Runner = Annotated[AnyRunner, Depends(get_runner)]


def _airflow_failed(exc: AirflowError) -> HTTPException:
    """503 when Airflow cannot be reached, 502 when it refused: nothing was queued."""
    status = 503 if isinstance(exc, AirflowUnavailable) else 502
    return HTTPException(status, f"{exc}; nothing was queued")


class JobCreated(BaseModel):
    job_id: str
    state: JobState


class JobStatus(BaseModel):
    """A job and how far it is. `cells_*` count grid cells (collect; an optimization's
    evaluations while it proposes); `judged` and
    `judge_total` count candidates (automatic judge). A job on Airflow has its DAG run
    (`dag_run_id`, `airflow_url`: its page in Airflow's UI), its mapped collect tasks done
    (`models_done` of `models_total`) and the task running now as `phase`. While the
    automatic judge loads its model (and reads the rubric every request shares), before its
    first candidate, `judge_loading` names the model."""

    job_id: str
    state: JobState
    experiment: str
    phase: str | None
    cells_done: int
    cells_total: int
    judged: int
    judge_total: int
    error: str | None
    exit_code: int | None
    attempts: int
    created_at: str
    started_at: str | None
    finished_at: str | None
    pid: int | None
    cancellable: bool
    resumable: bool
    config: dict[str, Any]
    dag_run_id: str | None = None
    airflow_url: str | None = None
    models_done: int = 0
    models_total: int = 0
    judge_loading: str | None = None

    @classmethod
    def of(cls, job: Job) -> JobStatus:
        progress = job.progress
        return cls(
            job_id=job.id,
            state=job.state,
            experiment=job.experiment,
            phase=progress.phase,
            cells_done=progress.cells_done,
            cells_total=progress.cells_total,
            judged=progress.judged,
            judge_total=progress.judge_total,
            judge_loading=progress.judge_loading,
            error=job.error,
            exit_code=job.exit_code,
            attempts=job.attempts,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            pid=job.pid,
            cancellable=job.state not in FINISHED and progress.phase != CANCELLING,
            resumable=job.state in RESUMABLE,
            config=job.config,
            dag_run_id=job.dag_run_id,
            airflow_url=job.remote_url,
            models_done=progress.models_done,
            models_total=progress.models_total,
        )


def _job(runner: AnyRunner, job_id: str) -> Job:
    try:
        return runner.store.get(job_id)
    except JobNotFound as exc:
        raise HTTPException(404, str(exc)) from None


_NOT_ALLOWED = "not a tracking URI this server allows"


def _tracking_allowed(settings: ServerSettings, uri: str | None) -> bool:
    """Whether a job may track to `uri` (None: the server's own store)."""
    return uri is None or same_uri(uri) in settings.allowed_tracking_uris


def ensure_queue_room(runner: AnyRunner, settings: ServerSettings) -> None:
    """429 when `TIPBENCH_MAX_QUEUED_JOBS` jobs are waiting already."""
    if (queued := runner.store.queued_count()) >= settings.max_queued_jobs:
        raise HTTPException(
            429,
            f"{queued} jobs are already queued (the limit, TIPBENCH_MAX_QUEUED_JOBS): "
            "wait for them to run or cancel some",
        )


@router.post("/run", status_code=202, response_model=JobCreated)
def start_run(
    body: RunRequest, runner: Runner, settings: Settings, response: Response
) -> JobCreated:
    """Queue `tipbench run` with this config; jobs run one at a time, oldest first.
    422 for a tracking URI the server does not allow, 429 when the queue is full. With
    Airflow configured, trigger `bench_collect` with it instead (503 if Airflow cannot be
    reached, 502 if it refuses the run: no job is created then)."""
    if not _tracking_allowed(settings, body.mlflow_url):
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "mlflow_url"),
                    "msg": f"{_NOT_ALLOWED}: leave it out for the server's own store, or add "
                    "it to TIPBENCH_TRACKING_URIS",
                    "type": "tracking_uri_not_allowed",
                }
            ]
        )
    ensure_queue_room(runner, settings)
    try:
        job = runner.submit(body)
    except AirflowError as exc:
        raise _airflow_failed(exc) from None
    response.headers["Location"] = f"/api/bench/jobs/{job.id}"
    return JobCreated(job_id=job.id, state=job.state)


@router.get("/jobs", response_model=list[JobStatus])
def list_jobs(runner: Runner, limit: int = Query(50, ge=1, le=1000)) -> list[JobStatus]:
    """The most recent jobs, newest first."""
    return [JobStatus.of(job) for job in runner.store.jobs(limit)]


@router.get("/jobs/{job_id}", response_model=JobStatus)
def job_status(job_id: JobId, runner: Runner) -> JobStatus:
    """A job's state and progress."""
    return JobStatus.of(_job(runner, job_id))


@router.post("/jobs/{job_id}/cancel", response_model=JobStatus)
def cancel_job(job_id: JobId, runner: Runner) -> JobStatus:
    """Cancel a queued job, or stop a running one (its model is unloaded and what it
    finished is kept); answers once it has stopped. 409 if it has already finished."""
    _job(runner, job_id)
    try:
        return JobStatus.of(runner.cancel(job_id, wait_s=CANCEL_WAIT_S))
    except JobConflict as exc:
        raise HTTPException(409, str(exc)) from None
    except AirflowError as exc:
        raise HTTPException(503 if isinstance(exc, AirflowUnavailable) else 502, str(exc)) from None


@router.post("/jobs/{job_id}/resume", status_code=202, response_model=JobStatus)
def resume_job(job_id: JobId, runner: Runner, settings: Settings) -> JobStatus:
    """Queue a failed, cancelled or interrupted job again with the same config; the
    pipeline skips what is already recorded. 409 for other states, or when its tracking
    URI is no longer allowed."""
    job = _job(runner, job_id)
    if not _tracking_allowed(settings, job.config.get("mlflow_url")):
        raise HTTPException(409, f"{_NOT_ALLOWED} any more: start a new run instead")
    try:
        return JobStatus.of(runner.resume(job_id))
    except JobConflict as exc:
        raise HTTPException(409, str(exc)) from None
    except AirflowError as exc:
        raise _airflow_failed(exc) from None


@router.get("/jobs/{job_id}/log", response_class=PlainTextResponse)
def job_log(
    job_id: JobId,
    runner: Runner,
    tail: int | None = Query(None, ge=1, le=100_000, description="Only the last N lines."),
) -> PlainTextResponse:
    """The job's log: every attempt's output, as plain text."""
    return PlainTextResponse(runner.log(_job(runner, job_id).id, tail))
