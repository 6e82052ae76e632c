"""What each task of the DAGs does: plain functions over tipbench's library, no Airflow.

A task's log carries its progress as progress events (`tipbench._progress_events`), as
`tipbench run` reports it to the job runner: the phase it starts, its count and each
finished cell or candidate.

Every function takes and returns JSON-able values (they travel as XComs) and is safe to run
again: collect and the automatic judge resume by cell key and by run, export rewrites the
same file, and compare and the promotion gate record a new run each time.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from tipbench._errors import ConfigError, TipbenchError
from tipbench._progress_events import ProgressEvents, StepCounter, Unit
from tipbench._redact import redact_uri
from tipbench.collect import CellOutcome, CollectConfig, collect, preflight
from tipbench.orchestration._conf import BenchConf, read_conf
from tipbench.orchestration._store import refuse_local_store, run_store, task_store
from tipbench.tracking import TrackingStore

logger = logging.getLogger("tipbench.orchestration")
#: The kind of the run that holds an exported judge file as its artifact.
JUDGE_FILE_KIND = "judge_file"
_EVENTS = ProgressEvents.to_logger(logger)  # a task's progress, as `tipbench run` reports it


class PhaseFailed(TipbenchError):
    """A phase left work undone (failed cells or runs); retrying the task resumes it."""


def plan(values: dict[str, Any], executors: str = "LocalExecutor") -> list[dict[str, Any]]:
    """Validate a run's conf, resolve its models and run the size guard; create the
    experiment. Nothing is written unless every check passes. With `executors` (Airflow's
    setting) other than local ones, a store only this machine can see is refused.

    Returns:
        One work order per model (one mapped collect task each): `conf` (the validated
        conf), `model` and `tracking_uri` (the store every task writes to, without
        credentials: each task takes them from the Connection or its environment).

    Raises:
        TipbenchError: the CLI's one-line message for the first problem.
    """
    conf = read_conf(values)
    uri = run_store(conf.mlflow_url)
    refuse_local_store(uri, executors)
    config = conf.collect_config()
    judge_model = _judge_model(conf)
    for backend, _ in preflight(config):
        logger.info(
            "model %s: size checked (at most %g B parameters)", backend.spec, conf.max_model_b
        )
    judge = config.model_copy(update={"models": [judge_model]})
    preflight(judge)
    logger.info("judge %s: size checked", judge_model)
    TrackingStore(task_store(uri)).experiment_id(conf.experiment, create=True)  # before fan-out
    logger.info(
        "plan: %d models × %d prompts, %d cells into %s at %s",
        len(config.models),
        len(config.prompts),
        conf.cell_count(),
        conf.experiment,
        redact_uri(uri),
    )
    validated = conf.model_dump(mode="json")
    return [{"conf": validated, "model": model, "tracking_uri": uri} for model in config.models]


def collect_model(
    conf: dict[str, Any], model: str, tracking_uri: str, origin: dict[str, str] | None = None
) -> dict[str, Any]:
    """Collect one model's block of the grid (its cells only, one load); the parent run is
    tagged with `origin` (the DAG run, task and try that collect it).

    Raises:
        PhaseFailed: if a cell failed or was not written (a retry resumes by cell key).
    """
    config = _grid(conf).model_copy(update={"models": [model]})
    _EVENTS.phase("collect")
    result = collect(
        config, tracking_uri=task_store(tracking_uri), progress=_CellLog(), parent_tags=origin
    )
    logger.info(
        "%s: %d cells, %d already recorded, %d collected, %d failed, loads %s",
        model,
        result.total,
        result.skipped,
        result.succeeded,
        len(result.failed),
        dict(result.model_loads) or "none",
    )
    problems = [*result.failed, *result.unwritten]
    if problems:
        cell, error = problems[0]
        raise PhaseFailed(f"{len(problems)} cells of {model} not recorded (first: {cell}: {error})")
    return {
        "model": model,
        "cells": result.total,
        "skipped": result.skipped,
        "collected": result.succeeded,
        "model_loads": sum(result.model_loads.values()),
    }


def judge_auto(conf: dict[str, Any], tracking_uri: str) -> dict[str, Any]:
    """Score every candidate without automatic scores yet.

    Raises:
        PhaseFailed: if a run could not be judged (a retry judges what is left).
    """
    from tipbench.pipeline import judge_grid

    bench = BenchConf.model_validate(conf)
    _EVENTS.phase("judge")
    result = judge_grid(
        TrackingStore(task_store(tracking_uri)),
        bench.collect_config(),
        _judge_model(bench),
        progress=_JudgeLog(),
    )
    logger.info(
        "judge %s: %d runs, %d already judged, %d judged (%d candidates), %d failed",
        result.judge_model,
        result.total,
        result.skipped,
        result.judged,
        result.candidates,
        len(result.failed),
    )
    problems = [*result.failed, *result.unwritten]
    if problems:
        run, error = problems[0]
        raise PhaseFailed(f"{len(problems)} runs not auto-judged (first: {run}: {error})")
    return {"judged": result.judged, "skipped": result.skipped, "candidates": result.candidates}


def export_for_judge(conf: dict[str, Any], tracking_uri: str) -> str:
    """Write the human judge's file and record it in the store as an artifact, so that
    every machine reaches it (`tipbench judge apply URI`); returns its artifact URI."""
    import tempfile
    from pathlib import Path

    from tipbench.pipeline import default_export_path, export_in_order

    experiment = str(conf["experiment"])
    store = TrackingStore(task_store(tracking_uri))
    _EVENTS.phase("export")
    with tempfile.TemporaryDirectory(prefix="tipbench-export-") as tmp:
        path = Path(tmp) / default_export_path(experiment).name
        exported = export_in_order(store, experiment, path)
        uri = store.log_file(store.experiment_id(experiment), JUDGE_FILE_KIND, path, "judge")
    result = exported.result
    logger.info(
        "%d runs (%d candidates) wait for the human judge in %s (%s)",
        result.runs,
        result.candidates,
        uri,
        exported.describe(),
    )
    return uri


def compare(experiment: str, tracking_uri: str) -> str | None:
    """Rank both tiers and log the leaderboard run; returns its id (None: nothing judged)."""
    from tipbench.compare import to_markdown
    from tipbench.pipeline import rank

    _EVENTS.phase("compare")
    ranking = rank(TrackingStore(task_store(tracking_uri)), experiment)
    logger.info("leaderboards of %s:\n%s", experiment, to_markdown(ranking.boards))
    if ranking.warning:
        logger.warning("%s", ranking.warning)
    elif ranking.run_id:
        logger.info("leaderboard logged as run %s", ranking.run_id)
    return ranking.run_id


def promotion_gate(experiment: str, tracking_uri: str, *, apply: bool) -> dict[str, Any]:
    """Run the promotion gate (a dry run unless `apply`) and record its decision; where the
    policy service has a state (`TIPBENCH_POLICY_STATE_URL`, else the default), the winner's
    tips must not do worse with users than production's (`promote`'s online condition)."""
    from tipbench.online import state_evidence
    from tipbench.promote import promote
    from tipbench.stats import gate_fields

    store = TrackingStore(task_store(tracking_uri))
    with state_evidence(store, os.environ.get("TIPBENCH_POLICY_STATE_URL")) as online:
        result = promote(store, experiment, apply=apply, record=True, online=online)
    decision = result.decision
    verdict = "PROMOTE" if decision.promote else "REFUSE"
    logger.info(
        "%s %s|%s (production now: %s)%s",
        verdict,
        decision.model,
        decision.prompt_version,
        decision.production or "none",
        "" if apply else " — dry run",
    )
    for condition in decision.conditions:
        logger.info(
            "  [%s] %s: %s", "x" if condition.passed else " ", condition.name, condition.figure
        )
    return {
        "experiment": experiment,
        "tracking_uri": tracking_uri,
        **gate_fields(decision.conditions),
        "applied": result.applied,
        "decision_run": result.decision_run,
        "registry_version": result.registry_version,
        "model": decision.model,
        "prompt_version": decision.prompt_version,
        "production": decision.production,
    }


def approval_request(gates: list[dict[str, Any]], wanted: set[str]) -> dict[str, Any] | None:
    """What a person is asked to approve: the passing decisions of the experiments whose
    promotion was asked to apply (`wanted`), with their evidence as the page's body (None:
    nothing to approve)."""
    passing = [gate for gate in gates if gate["promote"] and gate["experiment"] in wanted]
    if not passing:
        return None
    parts = []
    for gate in passing:
        parts.append(
            f"### {gate['experiment']}: promote {gate['model']} | {gate['prompt_version']}\n\n"
            f"Production now: {gate['production'] or 'none'}. Decision recorded as MLflow run "
            f"`{gate['decision_run']}` (dry run).\n"
        )
        parts.extend(
            f"- [{'x' if c['passed'] else ' '}] **{c['name']}**: {c['figure']}"
            for c in gate["conditions"]
        )
    return {"gates": passing, "body": "\n".join(parts)}


def apply_approved(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Apply the approved promotions (each gate runs again and records its decision)."""
    return [
        promotion_gate(gate["experiment"], gate["tracking_uri"], apply=True)
        for gate in request["gates"]
    ]


def record_approval(request: dict[str, Any], approved: bool, by: str) -> None:
    """Tag the dry-run decisions a person answered: `approval` approved or rejected, and who."""
    for gate in request["gates"]:
        if gate["decision_run"]:
            client = TrackingStore(task_store(gate["tracking_uri"])).client
            client.set_tag(gate["decision_run"], "approval", "approved" if approved else "rejected")
            client.set_tag(gate["decision_run"], "approved_by" if approved else "rejected_by", by)
        logger.info(
            "%s: promotion %s by %s", gate["experiment"], "approved" if approved else "rejected", by
        )


def run_outcome(states: dict[str, str | None], *, own: str) -> None:
    """The verdict of a `bench_collect` run from its task instances' states (mapped ones
    as `task_index`): every task but `own` must have succeeded.

    Raises:
        PhaseFailed: naming the tasks that did not (failed, cancelled or skipped ones).
    """
    unfinished = sorted(
        f"{task} {state or 'not run'}"
        for task, state in states.items()
        if task != own and state != "success"
    )
    if unfinished:
        raise PhaseFailed(f"the run did not complete: {', '.join(unfinished)}")


def _grid(conf: dict[str, Any]) -> CollectConfig:
    return BenchConf.model_validate(conf).collect_config()


def _judge_model(conf: BenchConf) -> str:
    from tipbench.auto_judge import DEFAULT_JUDGE_MODEL

    return conf.judge_model or DEFAULT_JUDGE_MODEL


class _TaskProgress:
    """A task's progress in its log: counts and finished steps as progress events (JSON
    lines, the format `tipbench run` writes for the job runner), notes as text."""

    def __init__(self, unit: Unit) -> None:
        self.steps = StepCounter(unit, _EVENTS)

    def begin(self, total: int, done: int) -> None:
        self.steps.begin(total, done)

    def start(self, label: str) -> None:
        pass  # the task log has a line per finished step; nothing to redraw

    def note(self, message: str) -> None:
        logger.info("%s", message)

    def loading(self, model: str, loading: bool) -> None:
        self.steps.loading(model, loading)


class _CellLog(_TaskProgress):
    """A `CollectProgress`: one event per cell."""

    def __init__(self) -> None:
        super().__init__("cells")

    def advance(self, outcome: CellOutcome) -> None:
        self.steps.step(outcome.cell.name, outcome.error)


class _JudgeLog(_TaskProgress):
    """An `AutoJudgeProgress`: one event per judged candidate."""

    def __init__(self) -> None:
        super().__init__("candidates")

    def advance(self, label: str, error: str | None = None, count: int = 1) -> None:
        self.steps.step(label, error, count)


def judged_requests(params: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `bench_judged` works on: one request per experiment named by the asset events
    (their `extra`, oldest first; an experiment's latest event wins), or the experiment of
    the run's conf when triggered by hand.

    Raises:
        ConfigError: if neither names a valid experiment.
    """
    from tipbench.collect import BENCH_EXPERIMENT_PATTERN

    named = [event for event in events if event.get("experiment")] or [params]
    requests: dict[str, dict[str, Any]] = {}
    for source in named:  # oldest first: the latest event of an experiment wins
        experiment = str(source.get("experiment") or "")
        if not re.fullmatch(BENCH_EXPERIMENT_PATTERN, experiment):
            raise ConfigError(f"experiment: expected tip-bench-NAME, not {experiment!r}")
        apply = bool(source.get("apply", params.get("apply", False)))
        uri = source.get("mlflow_url") or params.get("mlflow_url")
        requests.pop(experiment, None)
        requests[experiment] = {
            "experiment": experiment,
            "apply": apply,
            "tracking_uri": run_store(uri),
        }
    return list(requests.values())
