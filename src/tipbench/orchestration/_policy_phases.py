"""What each task of the `policy_simulate` DAG does: plain functions over tipbench's simulator,
the evaluation and the promotion rule; JSON-able values in and out (they travel as XComs).

`plan` validates the conf and fans out one order per seed; `simulate_seed` plays one seed's
world with every policy (the seed's figures depend on the seed alone, so a retried task
gives the same ones); `aggregate` summarises the seeds into the report and records the study
in MLflow (a new parent run each time); `promotion_dry_run` decides, without acting, whether
each simulated policy would replace the live one.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, ValidationError

from tipbench._errors import ConfigError
from tipbench._redact import redact_uri
from tipbench.orchestration._conf import one_line
from tipbench.simulate import (
    DEFAULT_EXPERIMENT,
    SeedOutcome,
    Simulation,
    SimulationConfig,
    load_study,
    simulate_seeds,
    summarise,
)
from tipbench.tracking import TrackingStore, resolve_tracking_uri

POLICY_SIMULATE = "policy_simulate"
logger = logging.getLogger("tipbench.orchestration")


class PolicySimulateConf(SimulationConfig):
    """`dag_run.conf` of `policy_simulate`: a study, where to record it, and optionally the
    serving state whose live policy and log the promotion dry run reads."""

    experiment: str = Field(
        default=DEFAULT_EXPERIMENT, min_length=1, max_length=250, description="MLflow experiment"
    )
    mlflow_url: str | None = Field(default=None, description="[default: $MLFLOW_TRACKING_URI]")
    state_url: str | None = Field(
        default=None,
        description="the serving state (live policy, log) of the dry run [default: none: the "
        "study's live policy, no off-policy evaluation]",
    )


def read_policy_conf(values: dict[str, Any]) -> PolicySimulateConf:
    """Validate a run's conf (`field: problem` on bad input, as the CLI says it).

    Raises:
        ConfigError: naming the first bad key.
    """
    try:
        return PolicySimulateConf.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


def plan(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate the conf (and the suite's population, and the study's size); one work order
    per seed."""
    conf = read_policy_conf(values)
    load_study(conf)
    uri = resolve_tracking_uri(conf.mlflow_url)
    TrackingStore(uri).experiment_id(conf.experiment, create=True)  # before the fan-out
    logger.info(
        "plan: %s over %d seeds × %d users × %d days into %s at %s",
        ",".join(conf.policies),
        conf.seeds,
        conf.users,
        conf.days,
        conf.experiment,
        redact_uri(uri),
    )
    validated = conf.model_dump(mode="json")
    return [{"conf": validated, "seed": seed, "tracking_uri": uri} for seed in conf.seed_list]


def simulate_seed(conf: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Every policy's outcome in world `seed`."""
    study = load_study(read_policy_conf(conf))
    outcomes = simulate_seeds(study, [seed])
    for outcome in outcomes:
        logger.info("seed %d: %s mean reward %.4f", seed, outcome.policy, outcome.overall.reward)
    return [o.to_dict() for o in outcomes]


def aggregate(
    conf: dict[str, Any], per_seed: list[list[dict[str, Any]]], tracking_uri: str
) -> dict[str, Any]:
    """The report over every seed, recorded in MLflow; returns its run and the report."""
    from tipbench.simulate import log_simulation

    validated = read_policy_conf(conf)
    study = load_study(validated)
    outcomes = [SeedOutcome.from_dict(o) for seed in per_seed for o in seed]
    report = summarise(outcomes, validated.live_policy, study.population.persona_ids)
    simulation = Simulation(study, tuple(outcomes), report)
    runs = log_simulation(TrackingStore(tracking_uri), validated.experiment, simulation)
    for policy in report.policies:
        vs = policy.vs_live
        versus = (
            "" if vs is None else f", {vs.difference.value:+.4f} vs live (p = {vs.p_value:.4g})"
        )
        logger.info("%s: %.4f%s", policy.policy, policy.overall["reward"].value, versus)
    return {"run_id": runs.parent_run_id, "report": report.to_dict()}


def promotion_dry_run(conf: dict[str, Any], aggregated: dict[str, Any]) -> dict[str, Any]:
    """What the promotion rule says of each simulated policy against the live one (the serving
    state's, with its log evaluated off-policy, when the conf names a state); nothing changes.
    """
    from tipbench.policy_gate import dry_runs, evaluate_state, serving_config
    from tipbench.policy_service import open_store

    validated = read_policy_conf(conf)
    live, evaluation = validated.live_policy, None
    if validated.state_url:
        store = open_store(validated.state_url, create=False)
        try:
            live = serving_config(store).live
            evaluation = evaluate_state(store, validated.policies)
        finally:
            store.close()
    decisions = dry_runs(live, aggregated["report"], evaluation)
    if isinstance(decisions, str):
        logger.info("no promotion decision: %s", decisions)
        return {"live": live, "decisions": [], "note": decisions}
    for decision in decisions:
        verdict = "would be promoted" if decision.promote else "refused"
        logger.info("%s over %s: %s", decision.challenger, live, verdict)
        for condition in decision.conditions:
            mark = "x" if condition.passed else " "
            logger.info("  [%s] %s: %s", mark, condition.name, condition.figure)
    return {
        "live": live,
        "decisions": [d.to_dict() | {"evidence": None} for d in decisions],
        "note": None,
        "simulation_run": aggregated["run_id"],
    }
