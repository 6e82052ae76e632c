"""Where the policy gate stands, for the admin server's Policies page: the serving roles with
each policy's counts, the latest simulation recorded in MLflow, the off-policy evaluation of
the state's log and the promotion decision each simulated challenger would get (a dry run).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipbench._errors import TrackingError
from tipbench.evaluate import EvaluationReport, evaluate, traffic_chunks
from tipbench.policies import FEATURE_NAMES, POLICIES
from tipbench.policy_gate._gate import (
    DEFAULT_MARGIN_REWARD,
    OFF_POLICY_MARGIN_REWARD,
    PromotionDecision,
    decide_promotion,
)
from tipbench.policy_gate._promote import serving_config
from tipbench.policy_service import DEFAULT_LIVE, Roles, StateStore, decision_rows
from tipbench.simulate import KIND_SIMULATION, PLOT_FILE, REPORT_FILE, SimulationReport
from tipbench.tracking import KIND_TAG, TrackingStore, short_error


def serving_summary(store: StateStore) -> dict[str, Any]:
    """The roles in force and every policy's role and counts."""
    roles = store.roles() or Roles(live=DEFAULT_LIVE)
    rows = []
    for name, spec in POLICIES.items():
        counts = store.counts(name)
        rows.append(
            {
                "policy": name,
                "role": roles.role(name),
                "features": f"{spec.features} ({len(FEATURE_NAMES[spec.features])})",
                "decisions": counts.decisions,
                "shadow_decisions": counts.shadow_decisions,
                "rewards": counts.rewards,
                "mean_reward": counts.mean_reward,
                "events": counts.events,
            }
        )
    return {"live": roles.live, "shadows": list(roles.shadows), "policies": rows}


def log_size(store: StateStore) -> tuple[int, int]:
    """(decisions, rewards) in the state's log: what an evaluation of it depends on."""
    counts = [store.counts(name) for name in POLICIES]
    return sum(c.decisions for c in counts), sum(c.rewards for c in counts)


def evaluate_state(store: StateStore, challengers: Sequence[str] = ()) -> EvaluationReport:
    """The off-policy evaluation of the state's log (live: the state's): every policy it has
    probabilities of but the live one, and the `challengers` (replayed if it has none)."""
    serving = serving_config(store)
    return evaluate(
        traffic_chunks(decision_rows(store)),
        also=[p for p in dict.fromkeys(challengers) if p != serving.live],
        live=serving.live,
        settings=serving.policies,
    )


@dataclass(frozen=True)
class RecordedSimulation:
    run_id: str
    started_ms: int
    report: dict[str, Any]  # `SimulationReport.to_dict()`, as recorded


def _latest_run(tracking: TrackingStore, experiment: str) -> Any:
    found = tracking.client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = tracking.client.search_runs(
        [found.experiment_id],
        f"tags.`{KIND_TAG}` = '{KIND_SIMULATION}' AND attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return runs[0] if runs else None


def latest_simulation(tracking: TrackingStore, experiment: str) -> RecordedSimulation | None:
    """The latest finished simulation of `experiment`, or None.

    Raises:
        TrackingError: the store cannot be read.
    """
    try:
        run = _latest_run(tracking, experiment)
        if run is None:
            return None
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            path = tracking.client.download_artifacts(run.info.run_id, REPORT_FILE, tmp)
            report = json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception as exc:
        raise TrackingError(
            f"cannot read the simulations at {tracking.shown_uri}: {short_error(exc)}"
        ) from None
    return RecordedSimulation(run.info.run_id, int(run.info.start_time), report)


def simulation_plot(tracking: TrackingStore, run_id: str) -> bytes:
    """The cumulative-reward chart of a recorded simulation (PNG).

    Raises:
        TrackingError: the run or its chart cannot be read.
    """
    try:
        run = tracking.client.get_run(run_id)
        if run.data.tags.get(KIND_TAG) != KIND_SIMULATION:
            raise TrackingError(f"run {run_id} is not a simulation")
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            path = tracking.client.download_artifacts(run_id, PLOT_FILE, tmp)
            return Path(path).read_bytes()
    except TrackingError:
        raise
    except Exception as exc:
        raise TrackingError(f"cannot read the chart of run {run_id}: {short_error(exc)}") from None


def dry_runs(
    live: str,
    simulation: dict[str, Any],
    evaluation: EvaluationReport | None,
    margin: float = DEFAULT_MARGIN_REWARD,
    off_policy_margin: float = OFF_POLICY_MARGIN_REWARD,
) -> list[PromotionDecision] | str:
    """The decision each simulated policy other than `live` would get now; a sentence instead
    when the simulation cannot say (it did not include the live policy)."""
    try:
        report = SimulationReport.from_dict(simulation, live=live)
    except ValueError as exc:
        return f"The latest simulation cannot decide: {exc}; simulate it beside the others."
    return [
        decide_promotion(
            name, live, report, evaluation, margin, off_policy_margin=off_policy_margin
        )
        for name in report.policy_names
        if name != live
    ]
