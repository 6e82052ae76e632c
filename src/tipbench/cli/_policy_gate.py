"""`tipbench policy simulate|evaluate|promote`: the gate a tip-serving policy passes to go live."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from tipbench._errors import ConfigError
from tipbench.cli import _options as options
from tipbench.evaluate import CLIP_WEIGHT, MIN_DECISIONS
from tipbench.policies import POLICIES, PolicyConfig
from tipbench.policy_gate import DEFAULT_MARGIN_REWARD, OFF_POLICY_MARGIN_REWARD
from tipbench.simulate import (
    DEFAULT_DAYS,
    DEFAULT_EXPERIMENT,
    DEFAULT_POLICIES,
    DEFAULT_SEEDS,
    DEFAULT_USERS,
    SimulationConfig,
)

F = TypeVar("F", bound=Callable[..., Any])
_DEFAULT_SETTINGS = PolicyConfig()
experiment = click.option(
    "--experiment",
    default=DEFAULT_EXPERIMENT,
    show_default=True,
    help="MLflow experiment of the policy studies.",
)
fmt = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
epsilon = click.option(
    "--epsilon", type=float, default=None, help=f"ε of egreedy-* [{_DEFAULT_SETTINGS.epsilon}]."
)
alpha = click.option(
    "--alpha", type=float, default=None, help=f"α of linucb [{_DEFAULT_SETTINGS.alpha}]."
)
floor = click.option(
    "--floor", type=float, default=None, help=f"linucb's floor γ [{_DEFAULT_SETTINGS.floor}]."
)
seeds = click.option("--seeds", type=int, default=None, help=f"Worlds simulated [{DEFAULT_SEEDS}].")
days = click.option("--days", type=int, default=None, help=f"Days per world [{DEFAULT_DAYS}].")
users = click.option("--users", type=int, default=None, help=f"Users per world [{DEFAULT_USERS}].")


def _together(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several option decorators as one (applied in the order given, as if stacked)."""

    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


world_size = _together(days, users, options.suite)  # the worlds of a study
policy_settings = _together(epsilon, alpha, floor)
recorded = _together(experiment, options.tracking_uri, fmt)  # where it goes, how it prints


def _settings(
    epsilon: float | None, alpha: float | None, floor: float | None
) -> dict[str, PolicyConfig]:
    """The policy settings given on the command line (the rest keep their defaults)."""
    values = {"epsilon": epsilon, "alpha": alpha, "floor": floor}
    given = {k: v for k, v in values.items() if v is not None}
    return {name: PolicyConfig.model_validate(given) for name in POLICIES} if given else {}


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _study(**fields: object) -> SimulationConfig:
    """The study's settings given on the command line (the rest keep their defaults)."""
    return SimulationConfig.model_validate({k: v for k, v in fields.items() if v is not None})


@click.command("simulate")
@click.option(
    "--policies",
    default=",".join(DEFAULT_POLICIES),
    show_default=True,
    help="Comma-separated policies; the first is the live one unless --live says.",
)
@click.option("--live", default=None, help="The policy the others are compared with.")
@seeds
@click.option("--first-seed", type=int, default=None, help="The first world's seed [0].")
@world_size
@policy_settings
@click.option(
    "--url",
    default=None,
    help="Serve the simulated users through a running `tipbench policy serve` at this URL "
    "(/serve and /reward, its live policy and shadows; needs TIPBENCH_POLICY_TOKEN) instead "
    "of in-process: its log then holds shadow traffic for `policy evaluate` and `promote`.",
)
@click.option(
    "--shared-state",
    is_flag=True,
    help="With --url: simulate even though the server's state holds other users' decisions.",
)
@recorded
@click.pass_context
def simulate_command(
    ctx: click.Context,
    policies: str,
    live: str | None,
    seeds: int | None,
    first_seed: int | None,
    days: int | None,
    users: int | None,
    suite: str | None,
    epsilon: float | None,
    alpha: float | None,
    floor: float | None,
    url: str | None,
    shared_state: bool,
    experiment: str,
    tracking_uri: str | None,
    fmt: str,
) -> None:
    """Simulate users and compare policies on the same worlds (paired by seed).

    Reports mean reward, regret against the oracle, completion and dismiss rates, overall and
    per persona, with 95% intervals over seeds, each policy's paired difference from the live
    one with its p-value, and the learning curve; records the study in MLflow.

    With --url the worlds are served through a running server as the app would: its live
    policy decides, its shadows log and learn, nothing in its state is reset or deleted; the
    report compares each shadow's would-be choices with what the live policy served.
    """
    from tipbench.simulate import (
        RemoteTarget,
        load_study,
        log_simulation,
        render_report,
        simulate,
        simulate_remote,
    )
    from tipbench.tracking import TrackingStore

    config = _study(
        policies=policies,
        live=live,
        seeds=seeds,
        first_seed=first_seed,
        days=days,
        users=users,
        suite=suite,
    )
    settings = _settings(epsilon, alpha, floor)
    if url is not None:
        if settings:
            raise ConfigError(
                "--url: the server's own settings decide; drop --epsilon/--alpha/--floor"
            )
        if any(_given(ctx, name) for name in ("policies", "live")):
            raise ConfigError(
                "--url: the server's roles decide (its live policy and shadows, GET /config); "
                "drop --policies/--live"
            )
        target = RemoteTarget.from_environment(url, shared=shared_state)
        load_study(config)  # a bad suite or size is refused before any request
        simulation = simulate_remote(config, target, lambda line: click.echo(line, err=True))
    else:
        if shared_state:
            raise ConfigError("--shared-state goes with --url")
        simulation = simulate(config, settings)
    runs = log_simulation(TrackingStore(tracking_uri), experiment, simulation)
    report = simulation.report
    if fmt == "json":
        click.echo(json.dumps({**report.to_dict(), "run_id": runs.parent_run_id}))
        return
    study = simulation.study.config
    per_seed = study.users * study.days * simulation.study.population.opportunities_per_day
    where = f"through {url} (/serve, its shadows logged)" if url else "in-process"
    header = (
        f"simulated {len(study.policies)} policies {where}: {study.seeds} seeds × "
        f"{study.users} users × {study.days} days ({per_seed:,} decisions per seed); "
        f"live: {report.live}"
    )
    if url:
        header += (
            "\nthe seeds were served one after another on the server's learning state, so "
            "they are not independent: read the intervals over seeds as rough"
        )
    for line in render_report(report, header):
        click.echo(line)
    click.echo(f"\nrecorded in MLflow: experiment {experiment!r}, run {runs.parent_run_id}")


@click.command("evaluate")
@options.state_url
@click.option(
    "--log",
    "log_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A decision log exported with `policy log export --format jsonl` (instead of a state).",
)
@click.option(
    "--policies",
    default=None,
    help="Comma-separated policies to evaluate [default: every shadow in the log]; a policy "
    "the log has no probabilities of is replayed on the logged features.",
)
@click.option("--live", default=None, help="The live policy [default: the latest /serve's].")
@click.option(
    "--include-score",
    is_flag=True,
    help="Also evaluate on the /score decisions (made by the policy named, not the live one; "
    "left out by default).",
)
@click.option(
    "--clip",
    type=click.FloatRange(min=1.0),
    default=CLIP_WEIGHT,
    show_default=True,
    help="Importance weights above this are clipped.",
)
@click.option(
    "--min-decisions",
    type=click.IntRange(min=1),
    default=MIN_DECISIONS,
    show_default=True,
    help="Fewer rewarded decisions with a policy's probabilities: too little data.",
)
@recorded
@click.pass_context
def evaluate_command(
    ctx: click.Context,
    state_url: str | None,
    log_file: Path | None,
    policies: str | None,
    live: str | None,
    include_score: bool,
    clip: float,
    min_decisions: int,
    experiment: str,
    tracking_uri: str | None,
    fmt: str,
) -> None:
    """Off-policy estimates (IPS, SNIPS, doubly robust) of each shadow's mean reward from the
    decision log, with 95% intervals, effective sample size and clipped weights; records the
    evaluation in MLflow.

    The log is checked first: a probability out of range or not summing to 1, a reward not a
    number in [0, 1], a shadow that scored other candidates is refused naming the decision and
    the field, and nothing is recorded; so is a log without decisions.
    """
    from tipbench._redact import redact_uri
    from tipbench.evaluate import (
        evaluate,
        log_evaluation,
        read_log,
        render_evaluation,
        traffic_chunks,
    )
    from tipbench.policy_gate import serving_config
    from tipbench.policy_service import decision_rows, open_store
    from tipbench.tracking import TrackingStore

    explicit_state = ctx.get_parameter_source("state_url") == ParameterSource.COMMANDLINE
    if log_file is not None and explicit_state:
        raise click.UsageError("give --state-url or --log, not both")
    names = [p.strip() for p in policies.split(",") if p.strip()] if policies else None
    store = None if log_file is not None else open_store(state_url, create=False)
    try:  # the log is read once, a chunk at a time: memory does not grow with it
        rows: Iterable[dict[str, Any]]
        if log_file is not None:
            rows, settings, source = read_log(log_file), None, str(log_file)
        elif store is not None:  # replayed policies decide with the state's settings
            serving = serving_config(store)
            rows, settings, live = decision_rows(store), serving.policies, live or serving.live
            source = redact_uri(state_url) if state_url else "the default state"
        chunks = traffic_chunks(rows, include_score=include_score)
        report = evaluate(
            chunks, names, live=live, settings=settings, clip=clip, min_decisions=min_decisions
        )
    finally:
        if store is not None:
            store.close()
    if report.decisions == 0:
        only_score = f" but {report.score_left_out:,} /score ones (--include-score)"
        raise ConfigError(
            f"{source}: the log holds no decision to evaluate"
            f"{only_score if report.score_left_out else ''}: nothing recorded"
        )
    run_id = log_evaluation(
        TrackingStore(tracking_uri), experiment, report, source, clip, min_decisions
    )
    if fmt == "json":
        click.echo(json.dumps({**report.to_dict(), "run_id": run_id}))
        return
    for line in render_evaluation(report):
        click.echo(line)
    click.echo(f"\nrecorded in MLflow: experiment {experiment!r}, run {run_id}")


@click.command("promote")
@click.option("--challenger", required=True, help="The policy that would become live.")
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Switch the roles on a passing decision and record it [default: a dry run].",
)
@options.state_url
@click.option(
    "--margin",
    type=float,
    default=DEFAULT_MARGIN_REWARD,
    show_default=True,
    help="Mean reward per decision the challenger must gain in the simulator.",
)
@click.option(
    "--off-policy-margin",
    type=click.FloatRange(min=0.0, max=1.0),
    default=OFF_POLICY_MARGIN_REWARD,
    show_default=True,
    help="δ: the loss per decision the served traffic must rule out (the lower bound of "
    "challenger − live above −δ).",
)
@seeds
@world_size
@policy_settings
@recorded
def promote_command(
    challenger: str,
    apply_: bool,
    state_url: str | None,
    margin: float,
    off_policy_margin: float,
    seeds: int | None,
    days: int | None,
    users: int | None,
    suite: str | None,
    epsilon: float | None,
    alpha: float | None,
    floor: float | None,
    experiment: str,
    tracking_uri: str | None,
    fmt: str,
) -> None:
    """Make the challenger live only if it beats the live policy in the simulator (paired, by
    a margin, p < 0.05) and the served traffic rules out a loss of δ: the lower bound of its
    off-policy estimate minus the live policy's observed reward lies above −δ. An interval
    that still holds −δ refuses, saying about how many more shadow decisions would rule the
    loss out with 80% power; a log that gives no estimate (no traffic, a challenger whose
    choices it never showed) refuses as not enough traffic.

    Exit code 0 when it is (or would be) promoted, 3 when the gate refuses.
    """
    from tipbench.policy_gate import promote_policy

    study = _study(seeds=seeds, days=days, users=users, suite=suite)
    result = promote_policy(
        challenger,
        state_url=state_url,
        apply=apply_,
        study=study,
        settings=_settings(epsilon, alpha, floor),
        margin=margin,
        off_policy_margin=off_policy_margin,
        tracking_uri=tracking_uri,
        experiment=experiment,
    )
    decision = result.decision
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    **decision.to_dict(),
                    "applied": result.applied,
                    "live_after": result.roles_after.live,
                    "shadows_after": list(result.roles_after.shadows),
                    "decision_run": result.decision_run,
                }
            )
        )
    else:
        verdict = "PROMOTE" if decision.promote else "REFUSE"
        click.echo(f"{verdict} {decision.challenger} (live now: {result.roles_before.live})")
        for condition in decision.conditions:
            click.echo(
                f"  [{'x' if condition.passed else ' '}] {condition.name}: {condition.figure}"
            )
        if not apply_:
            click.echo("dry run: nothing changed (pass --apply to switch the roles and record it)")
        elif result.applied:
            click.echo(
                f"live: {result.roles_after.live}; shadows: "
                f"{', '.join(result.roles_after.shadows) or 'none'} (replicas follow at once); "
                f"decision recorded in run {result.decision_run}"
            )
        else:
            click.echo(f"refusal recorded in run {result.decision_run}")
    sys.exit(0 if decision.promote else 3)
