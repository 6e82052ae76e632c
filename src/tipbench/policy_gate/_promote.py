"""`tipbench policy promote`: decide from the simulator and the decision log, and on `apply`
switch the roles in the serving state and record the decision in MLflow.

The live policy is the serving state's. The simulator plays the live policy and the
challenger (paired, the study's size); the state's decision log is evaluated off-policy for
the challenger. With `apply`, a passing decision makes the challenger live and the old live
policy a shadow (the other shadows stay): replicas read the roles from the state on every
request, so they follow without a restart. Applied or refused, the decision is recorded with
its evidence: the simulation (its runs), the evaluation (its run) and a decision run that
names both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tipbench._errors import ConfigError, TrackingError
from tipbench._redact import redact_uri
from tipbench.evaluate import EvaluationReport, evaluate, log_evaluation, traffic_chunks
from tipbench.policies import PolicyConfig, policy_spec
from tipbench.policy_gate._gate import (
    DEFAULT_MARGIN_REWARD,
    OFF_POLICY_MARGIN_REWARD,
    PromotionDecision,
    decide_promotion,
)
from tipbench.policy_service import (
    DEFAULT_LIVE,
    ConfigDocument,
    PolicyService,
    Roles,
    ServingConfig,
    StateStore,
    decision_rows,
    open_store,
)
from tipbench.simulate import (
    DEFAULT_EXPERIMENT,
    Simulation,
    SimulationConfig,
    log_simulation,
    simulate,
)
from tipbench.suite import load_suite
from tipbench.tracking import KIND_TAG, RunRecord, TrackingStore, record_run

KIND_PROMOTION = "policy_promotion"
DECISION_FILE = "decision.json"


@dataclass(frozen=True)
class PromotionResult:
    decision: PromotionDecision
    applied: bool  # the roles were switched
    roles_before: Roles
    roles_after: Roles
    decision_run: str | None = None  # the MLflow run recording the decision (--apply)


def promote_policy(
    challenger: str,
    *,
    state_url: str | None = None,
    apply: bool = False,
    study: SimulationConfig | None = None,
    settings: Mapping[str, PolicyConfig] | None = None,
    margin: float = DEFAULT_MARGIN_REWARD,
    off_policy_margin: float = OFF_POLICY_MARGIN_REWARD,
    tracking_uri: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
) -> PromotionResult:
    """Decide whether `challenger` replaces the live policy; with `apply`, act and record.

    `study` gives the simulation's size and suite (its policies are replaced by the live
    policy and the challenger); `settings` override the policies' settings, which are
    otherwise the serving state's (what production decides with). `margin` is the gain the
    simulator must show, `off_policy_margin` (δ) the loss the served traffic must rule out.

    Raises:
        ConfigError: an unknown challenger, a missing state, a decision log that breaks a
            rule of the log (`tipbench.evaluate.check_row`), the roles changed meanwhile.
        TrackingError: the decision could not be recorded (after a switch, the message says so).
    """
    policy_spec(challenger)
    store = open_store(state_url, create=False)
    try:
        serving = serving_config(store)
        roles = Roles(serving.live, serving.shadows)
        live = roles.live
        settings = {**serving.policies, **(settings or {})}
        evaluation: EvaluationReport | None = None
        simulation: Simulation | None = None
        if challenger != live:  # the log first: a bad one refuses before the simulation
            evaluation = evaluate(
                traffic_chunks(decision_rows(store)), [challenger], live=live, settings=settings
            )
            config = (study or SimulationConfig()).model_copy(
                update={"policies": (live, challenger), "live": live}
            )
            simulation = simulate(config, settings)
            decision = decide_promotion(
                challenger,
                live,
                simulation.report,
                evaluation,
                margin,
                off_policy_margin=off_policy_margin,
            )
        else:
            decision = decide_promotion(challenger, live, None, None, margin)
        if not apply:
            return PromotionResult(decision, False, roles, roles)
        after = roles
        if decision.promote:
            after = switch_roles(store, roles, challenger)
    finally:
        store.close()
    run = _record(
        tracking_uri, experiment, decision, simulation, evaluation, roles, after, state_url
    )
    return PromotionResult(decision, decision.promote, roles, after, run)


def serving_config(store: StateStore) -> ServingConfig:
    """The serving config in force in the state: roles and every policy's settings."""
    catalogue = load_suite().catalogue
    assert catalogue is not None  # the bundled suite has one
    return PolicyService(store, catalogue).serving_config()


def switch_roles(store: StateStore, roles: Roles, challenger: str) -> Roles:
    """Make `challenger` live and the live policy a shadow (other shadows stay), in one
    transaction, only if the roles are still `roles`.

    Raises:
        ConfigError: the roles changed since they were read.
    """
    shadows = [roles.live, *(s for s in roles.shadows if s != challenger)]

    def switched(stored: ConfigDocument) -> ConfigDocument:
        now = Roles(stored.get("live", DEFAULT_LIVE), tuple(stored.get("shadows") or ()))
        if now != roles:
            raise ConfigError("the roles changed while deciding: run promote again")
        return {**stored, "live": challenger, "shadows": shadows}

    store.update_config(switched)
    return Roles(challenger, tuple(shadows))


def _record(
    tracking_uri: str | None,
    experiment: str,
    decision: PromotionDecision,
    simulation: Simulation | None,
    evaluation: EvaluationReport | None,
    before: Roles,
    after: Roles,
    state_url: str | None,
) -> str:
    switched = before != after
    try:
        store = TrackingStore(tracking_uri)
        tags = {
            KIND_TAG: KIND_PROMOTION,
            "decision": "promoted" if decision.promote else "refused",
            "challenger": decision.challenger,
            "live_before": before.live,
            "live_after": after.live,
            "shadows_after": ",".join(after.shadows),
        }
        if simulation is not None:
            tags["simulation_run"] = log_simulation(store, experiment, simulation).parent_run_id
        if evaluation is not None:
            source = redact_uri(state_url) if state_url else "the default state"
            tags["evaluation_run"] = log_evaluation(store, experiment, evaluation, source)
        record = RunRecord(
            run_name=f"policy promote {decision.challenger}: {tags['decision']}",
            params={"challenger": decision.challenger, "live": decision.live},
            tags=tags,
            metrics={},
            artifacts={DECISION_FILE: json.dumps(decision.to_dict(), indent=2)},
        )
        experiment_id = store.experiment_id(experiment, create=True)
        return record_run(store, experiment_id, record, "the promotion decision")
    except TrackingError as exc:
        if switched:
            raise TrackingError(f"{exc} (the roles did change: {after.live} is live)") from None
        raise
