"""`/api/optimize`: the optimizations of an experiment (progress per iteration, the lineage of
versions with their scores, the chart) and the optimization jobs the Optimize page starts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response

from tipbench.admin._airflow_jobs import AirflowJobRunner
from tipbench.admin._api_jobs import JobCreated, Runner, ensure_queue_room
from tipbench.admin._deps import ExperimentName, Settings, Store
from tipbench.admin._optimize_jobs import OptimizationJobRequest
from tipbench.optimize import optimization_chart, optimization_detail, optimizations

router = APIRouter(prefix="/api/optimize", tags=["optimize"])


def _run_id(run_id: str) -> str:
    if not run_id.isalnum() or len(run_id) > 64:
        raise HTTPException(404, "no such optimization")
    return run_id


@router.post("/run", status_code=202, response_model=JobCreated)
def start_optimization(
    body: OptimizationJobRequest, runner: Runner, settings: Settings, response: Response
) -> JobCreated:
    """Queue `tipbench optimize` as a job (its status, log, cancel and resume are the bench
    jobs' routes); 422 names a bad field, 429 when the queue is full."""
    if isinstance(runner, AirflowJobRunner):
        raise HTTPException(
            409, "jobs run on Airflow here: trigger the prompt_optimize DAG there instead"
        )
    ensure_queue_room(runner, settings)
    job = runner.submit(body)
    response.headers["Location"] = f"/api/bench/jobs/{job.id}"
    return JobCreated(job_id=job.id, state=job.state)


@router.get("/{experiment}")
def list_optimizations(experiment: ExperimentName, store: Store) -> dict[str, Any]:
    """The experiment's optimizations, newest first, each with how far it is."""
    return {
        "experiment": experiment,
        "optimizations": [o.to_dict() for o in optimizations(store, experiment)],
    }


@router.get("/{experiment}/{run_id}")
def optimization(experiment: ExperimentName, run_id: str, store: Store) -> dict[str, Any]:
    """One optimization: its progress per iteration and its lineage of versions."""
    try:
        return optimization_detail(store, experiment, _run_id(run_id))
    except KeyError:
        raise HTTPException(404, "no such optimization") from None


@router.get("/{experiment}/{run_id}/chart.png", response_class=Response)
def chart(experiment: ExperimentName, run_id: str, store: Store) -> Response:
    """The best training score per iteration (drawn when the optimization ends)."""
    try:
        optimization_detail(store, experiment, _run_id(run_id))  # in this experiment
    except KeyError:
        raise HTTPException(404, "no such optimization") from None
    found = optimization_chart(store, run_id)
    if found is None:
        raise HTTPException(404, "no chart yet: it is drawn when the optimization ends")
    return Response(found, media_type="image/png")
