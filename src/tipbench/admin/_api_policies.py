"""`/api/policies`: what the Policies page shows (the serving state, the latest simulation,
the off-policy evaluation, the promotion dry run) and the simulation jobs it starts."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool

from tipbench._errors import ConfigError
from tipbench._redact import redact_uri
from tipbench.admin._airflow_jobs import AirflowJobRunner
from tipbench.admin._api_jobs import JobCreated, Runner, ensure_queue_room
from tipbench.admin._deps import Settings, Store
from tipbench.admin._policy_jobs import SimulationJobRequest
from tipbench.admin._settings import ServerSettings
from tipbench.evaluate import EvaluationReport
from tipbench.policy_gate import (
    DEFAULT_MARGIN_REWARD,
    dry_runs,
    evaluate_state,
    latest_simulation,
    log_size,
    serving_summary,
    simulation_plot,
)
from tipbench.policy_service import StateStore, default_state_url, open_store
from tipbench.simulate import DEFAULT_EXPERIMENT

router = APIRouter(prefix="/api/policies", tags=["policies"])
_evaluations = threading.Lock()


def _state_url(settings: ServerSettings) -> str:
    return settings.policy_state_url or default_state_url()


def _open(settings: ServerSettings) -> StateStore | None:
    """The serving state, or None when there is none at the URL (nothing served yet)."""
    try:
        return open_store(_state_url(settings), create=False)
    except ConfigError:
        return None


def _evaluation(
    request: Request, settings: ServerSettings, store: StateStore, challengers: Sequence[str] = ()
) -> EvaluationReport:
    """The state's evaluation (its shadows and `challengers`), computed again only when its
    log has grown."""
    key = (_state_url(settings), *log_size(store), tuple(challengers))
    with _evaluations:
        cached = getattr(request.app.state, "policy_evaluations", {})
        if key not in cached:
            cached = {key: evaluate_state(store, challengers)}  # the latest log's only
            request.app.state.policy_evaluations = cached
        report: EvaluationReport = cached[key]
        return report


@router.get("")
def policies(settings: Settings) -> dict[str, Any]:
    """The live and shadow policies with their counts (`state: null` without a state)."""
    store = _open(settings)
    shown = redact_uri(_state_url(settings))
    if store is None:
        return {"state": None, "state_url": shown}
    try:
        return {"state": serving_summary(store), "state_url": shown}
    finally:
        store.close()


@router.get("/simulation")
def simulation(store: Store, experiment: str = DEFAULT_EXPERIMENT) -> dict[str, Any]:
    """The latest simulation recorded in `experiment` (`simulation: null` if none yet)."""
    found = latest_simulation(store, experiment)
    if found is None:
        return {"simulation": None, "experiment": experiment}
    return {
        "simulation": found.report,
        "run_id": found.run_id,
        "started_ms": found.started_ms,
        "experiment": experiment,
        "plot": f"/api/policies/simulation/{found.run_id}/plot.png",
    }


@router.get("/simulation/{run_id}/plot.png", response_class=Response)
def plot(run_id: str, store: Store) -> Response:
    """A recorded simulation's chart: cumulative reward per user by day, 95% bands."""
    if not run_id.isalnum() or len(run_id) > 64:
        raise HTTPException(404, "no such simulation")
    return Response(simulation_plot(store, run_id), media_type="image/png")


@router.get("/evaluation")
async def evaluation(request: Request, settings: Settings) -> dict[str, Any]:
    """The off-policy evaluation of every shadow in the state's log."""
    store = _open(settings)
    if store is None:
        return {"evaluation": None}
    try:
        report = await run_in_threadpool(_evaluation, request, settings, store)
    finally:
        store.close()
    return {"evaluation": report.to_dict()}


@router.get("/promotion")
async def promotion(
    request: Request, settings: Settings, store: Store, experiment: str = DEFAULT_EXPERIMENT
) -> dict[str, Any]:
    """The dry run: the decision each policy of the latest simulation would get against the
    live one now (nothing is changed; `tipbench policy promote --apply` acts)."""
    found = await run_in_threadpool(latest_simulation, store, experiment)
    state = _open(settings)
    if state is None:
        note = "Nothing served yet: a dry run needs the live policy of tipbench policy serve."
        return {"live": None, "decisions": [], "note": note}
    try:
        live = serving_summary(state)["live"]
        if found is None:
            return {"live": live, "decisions": [], "note": "No simulation yet: start one below."}
        challengers = [str(p["policy"]) for p in found.report.get("policies", [])]
        report = await run_in_threadpool(_evaluation, request, settings, state, challengers)
    finally:
        state.close()
    decisions = dry_runs(live, found.report, report, DEFAULT_MARGIN_REWARD)
    if isinstance(decisions, str):
        return {"live": live, "decisions": [], "note": decisions}
    return {
        "live": live,
        "decisions": [d.to_dict() | {"evidence": None} for d in decisions],
        "note": None,
        "simulation_run": found.run_id,
    }


@router.post("/simulate", status_code=202, response_model=JobCreated)
def simulate(
    body: SimulationJobRequest, runner: Runner, settings: Settings, response: Response
) -> JobCreated:
    """Queue `tipbench policy simulate` as a job (its status, log and cancel are the bench
    jobs' routes); 429 when the queue is full."""
    if isinstance(runner, AirflowJobRunner):
        raise HTTPException(
            409, "jobs run on Airflow here: trigger the policy_simulate DAG there instead"
        )
    ensure_queue_room(runner, settings)
    job = runner.submit(body)
    response.headers["Location"] = f"/api/bench/jobs/{job.id}"
    return JobCreated(job_id=job.id, state=job.state)
