"""`tipbench promote`: the gate's decision, and with --apply the move to production."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tipbench.cli import _options as options
from tipbench.promote import (
    DEFAULT_MARGIN_POINTS,
    DEFAULT_ONLINE_MARGIN,
    DEFAULT_PROMPT_NAME,
    promote,
)
from tipbench.tracking import TrackingStore, check_experiment


@click.command("promote")
@options.experiment
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Act on a passing decision and record it [default: a dry run].",
)
@click.option(
    "--prompt-name",
    default=DEFAULT_PROMPT_NAME,
    show_default=True,
    help="The prompt's name in the MLflow Prompt Registry.",
)
@click.option(
    "--margin",
    type=float,
    default=DEFAULT_MARGIN_POINTS,
    show_default=True,
    help="Composite points the winner must gain over the production prompt.",
)
@options.min_scenarios
@options.min_kappa
@options.suite
@click.option(
    "--online-log",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also require the winner's tips not to fare worse with users than production's, "
    "from this decision log (`policy log export`) where it can tell.",
)
@click.option(
    "--online-state-url",
    default=None,
    help="As --online-log, from the policy service's state (sqlite:///PATH, postgresql://...).",
)
@click.option(
    "--online-margin",
    type=click.FloatRange(min=0.0, max=1.0),
    default=DEFAULT_ONLINE_MARGIN,
    show_default=True,
    help="The loss of reward per decision the online traffic must rule out.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@options.tracking_uri
def promote_command(
    experiment: str,
    apply_: bool,
    prompt_name: str,
    margin: float,
    min_scenarios: int,
    min_kappa: float,
    suite: str | None,
    online_log: Path | None,
    online_state_url: str | None,
    online_margin: float,
    fmt: str,
    tracking_uri: str | None,
) -> None:
    """Promote the winning prompt only if the judges and the statistics agree.

    Where both tiers have scores drawn in a judging order, the combined tier decides (the
    automatic judge counts as a predictor the human scores correct, calibrated or not);
    otherwise both tiers must rank it first. The first line after the verdict says which.

    With --online-log or --online-state-url the winner must also not be worse with users
    than production (the value of serving each one's tips, paired by decision, by more than
    --online-margin); where the log has no estimate for both, the gate says so and decides
    without it.

    Exit code 0 when the decision is to promote, 3 when the gate refuses.
    """
    from tipbench.cli._compare_online import promotion_evidence

    check_experiment(tracking_uri, experiment)  # a typo is answered before MLflow loads
    store = TrackingStore(tracking_uri)
    with promotion_evidence(store, online_log, online_state_url) as online:
        result = promote(
            store,
            experiment,
            apply=apply_,
            prompt_name=prompt_name,
            margin=margin,
            min_scenarios=min_scenarios,
            suite=suite,
            min_kappa=min_kappa,
            online=online,
            online_margin=online_margin,
        )
    decision = result.decision
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    **decision.to_dict(),
                    "applied": result.applied,
                    "registry_version": result.registry_version,
                }
            )
        )
    else:
        verdict = "PROMOTE" if decision.promote else "REFUSE"
        candidate = (
            f"{decision.model}|{decision.prompt_version}"
            if decision.model is not None
            else f"nothing: no human leader in {experiment!r} to promote"
        )
        click.echo(f"{verdict} {candidate} (production now: {decision.production or 'none'})")
        click.echo(decision.decided_how())
        for condition in decision.conditions:
            mark = "x" if condition.passed else " "
            click.echo(f"  [{mark}] {condition.name}: {condition.figure}")
        if not result.applied:
            click.echo("dry run: nothing changed (pass --apply to act and record the decision)")
        elif result.registry_version is not None:
            click.echo(
                f"'{prompt_name}@production' → version {result.registry_version}; "
                f"decision recorded in run {result.decision_run}"
            )
        else:
            click.echo(f"refusal recorded in run {result.decision_run}")
    sys.exit(0 if decision.promote else 3)
