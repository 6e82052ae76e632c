"""`tipbench judge …`: the human tier's file round trip, and the two tiers compared."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from tipbench._errors import ConfigError
from tipbench._words import counted
from tipbench.auto_judge import (
    FIGURE_SCALES,
    agreement_notes,
    export_disagreements,
    scored_pairs,
    tier_agreement,
)
from tipbench.cli import _options as options
from tipbench.cli._judge_auto import auto_command
from tipbench.cli._judge_calibrate import calibrate_command
from tipbench.human_tier import (
    HUMAN_JUDGES_VARIABLE,
    ORDERS,
    ApplyResult,
    ExportResult,
    FeedbackApplyResult,
    Order,
    apply_judge_file,
    apply_mlflow_feedback,
    parse_humans,
    require_humans,
)
from tipbench.pipeline import export_in_order
from tipbench.stats import json_number
from tipbench.suite import levels, levels_text
from tipbench.tracking import TrackingStore, check_experiment


@click.group("judge")
def judge_group() -> None:
    """Score candidates: a human through a judge file, or an automatic LLM judge."""


judge_group.add_command(auto_command)
judge_group.add_command(calibrate_command)


reveal_option = click.option(
    "--reveal",
    is_flag=True,
    help="Show each run's model and prompt version, in run order [default: blind, shuffled].",
)
seed_option = click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the blind order [default: the existing file's, else random].",
)


def report_export(result: ExportResult) -> None:
    """How many runs and candidates, how many of them already hold scores, and notes."""
    scored = f", {result.scored} already scored" if result.scored else ""
    partly = f", {result.partly} partly" if result.partly else ""
    carried = f", {result.carried} of them carried over from the file" if result.carried else ""
    click.echo(
        f"exported {counted(result.runs, 'run')} "
        f"({counted(result.candidates, 'candidate')}{scored}{partly}{carried}) to {result.path}"
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


order_option = click.option(
    "--order",
    "order_kind",
    type=click.Choice(ORDERS),
    default=None,
    help="The judging order: active (runs that most narrow the doubt about the leader "
    "first) or uniform (shuffled) [default: the experiment's, else active]. Another kind "
    "than the experiment's starts a new order.",
)


@judge_group.command("export")
@options.experiment
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@reveal_option
@seed_option
@order_option
@options.tracking_uri
def export_command(
    experiment: str,
    out: Path,
    reveal: bool,
    seed: int | None,
    order_kind: Order | None,
    tracking_uri: str | None,
) -> None:
    """Write every run still waiting for the human judge into one JSON file.

    Scores already in the file are carried over. Judging is blind: the file shows no model
    or prompt version, lists the runs in the experiment's judging order (each cell's runs
    in a random queue; active: the cells whose comparison with the leader is open first)
    and each run's candidates shuffled. Judge the items in the order given: a run scored
    out of turn counts in the combined tier only once the runs before it are scored.
    """
    check_experiment(tracking_uri, experiment)  # a typo is answered before MLflow loads
    store = TrackingStore(tracking_uri)
    exported = export_in_order(store, experiment, out, reveal=reveal, seed=seed, order=order_kind)
    result = exported.result
    report_export(result)
    click.echo(exported.describe())
    if result.runs:
        click.echo(
            f"fill in the scores, then: tipbench judge apply --experiment {experiment} {out}"
        )


@judge_group.command("apply")
@options.experiment
@click.argument("file", required=False)
@click.option(
    "--from-mlflow",
    is_flag=True,
    help="Instead of a file: the scores people gave as feedback on the candidates in "
    "MLflow's trace view (named relevance, actionability, tone, format_ok, overlong).",
)
@click.option(
    "--human",
    "humans",
    envvar=HUMAN_JUDGES_VARIABLE,
    default=None,
    help="With --from-mlflow: the feedback sources taken as human judges, comma-separated "
    f"[default: ${HUMAN_JUDGES_VARIABLE}; none: nothing is taken]. MLflow's own permissions "
    "decide who can write feedback; this decides whose names tipbench takes.",
)
@click.option(
    "--judge",
    default=None,
    help="Who scored [default: the file's judge, else $TIPBENCH_JUDGE, else your user name; "
    "with --from-mlflow: who gave the feedback].",
)
@click.option(
    "--force",
    is_flag=True,
    help="Also write the runs scored by someone else since the file was exported "
    "(their version stays in the history) [default: refuse them, write the rest].",
)
@options.tracking_uri
def apply_command(
    experiment: str,
    file: str | None,
    from_mlflow: bool,
    humans: str | None,
    judge: str | None,
    force: bool,
    tracking_uri: str | None,
) -> None:
    """Validate a judge file as a whole, then record the scores of completely scored runs.

    A run scored by someone else (another file, the judging page) since the file was
    exported is refused, naming who and when, unless --force; the other runs are written.
    With --from-mlflow, the feedback given on candidates' spans in MLflow's trace view by
    the human judges named with --human is checked and recorded the same way (blindness
    does not apply there); feedback from other sources is left out and counted. FILE may be
    the MLflow artifact URI of a judge file (`runs:/…`, as Airflow's export_for_judge
    returns it).
    """
    if (file is None) == (not from_mlflow):
        raise click.UsageError("give a judge file or --from-mlflow (one of them)")
    listed = parse_humans(humans)
    if from_mlflow:
        require_humans(listed)  # before MLflow loads
    artifact = file is not None and is_artifact_uri(file)
    if file is not None and not artifact and not Path(file).is_file():  # before MLflow loads
        raise ConfigError(f"{file}: no such file")
    check_experiment(tracking_uri, experiment)
    store = TrackingStore(tracking_uri)
    result: ApplyResult
    with tempfile.TemporaryDirectory(prefix="tipbench-judge-") as tmp:
        if file is None:
            result = apply_mlflow_feedback(store, experiment, judge, humans=listed, force=force)
        else:
            path = store.fetch_file(file, Path(tmp)) if artifact else Path(file)
            result = apply_judge_file(store, experiment, path, judge, force=force)
    report_apply(result)
    if isinstance(result, FeedbackApplyResult):
        report_left_out(result)
    if result.applied or result.drafted:
        from tipbench.orchestration import announce_judged  # compare and httpx load only now
        from tipbench.pipeline import scores_written

        after = scores_written(
            store, experiment, final=bool(result.applied), announce=announce_judged
        )
        if after.refreshed:
            click.echo(f"refreshed the logged leaderboard (run {after.refreshed})")
        for warning in after.warnings:
            click.echo(f"warning: {warning}", err=True)
    sys.exit(result.exit_code)


def is_artifact_uri(value: str) -> bool:
    """Whether a FILE argument names an MLflow artifact rather than a local file."""
    return value.startswith(("runs:/", "mlflow-artifacts:/", "models:/"))


def report_left_out(result: FeedbackApplyResult) -> None:
    """A line per feedback source not on the allow-list whose scores were not taken."""
    for source, count in result.left_out.items():
        click.echo(
            f"  left out: {counted(count, 'score')} by {source!r} (not on --human: MLflow "
            "lets anyone who can write to it give feedback under any name)",
            err=True,
        )


def report_apply(result: ApplyResult) -> None:
    """One line of counts, then a line per partly scored, refused, forced or failed run."""
    counts = [
        f"applied {counted(result.applied, 'run')}",
        f"{result.unchanged} unchanged",
        f"{result.incomplete} not completely scored yet",
    ]
    if result.untouched:
        counts.append(f"{result.untouched} not scored yet")
    if result.refused:
        counts.append(f"{len(result.refused)} refused")
    click.echo(", ".join(counts))
    for pending in result.pending:
        partly = f", {pending.partly} partly" if pending.partly else ""
        click.echo(
            f"  not complete yet: {pending.item}: {pending.scored} of "
            f"{counted(pending.total, 'candidate')} scored{partly} (kept as a draft; the run "
            "stays pending)"
        )
    for stale in result.refused:
        click.echo(
            f"  refused: {stale.describe()}; not written: export again onto this file to "
            "merge theirs in, or apply --force to keep yours",
            err=True,
        )
    for stale in result.forced:
        click.echo(
            f"  forced: {stale.describe()}; written over it (that version stays in the "
            "run's history)",
            err=True,
        )
    for run_id, error in result.failed:
        click.echo(f"  not written: run {run_id}: {error}", err=True)


@judge_group.command("agreement")
@options.experiment
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@options.tracking_uri
def agreement_command(experiment: str, fmt: str, tracking_uri: str | None) -> None:
    """How well the automatic judge agrees with the human, per criterion."""
    pairs = scored_pairs(TrackingStore(tracking_uri), experiment)
    figures = tier_agreement(pairs)
    notes = agreement_notes(pairs, figures)
    if fmt == "json":
        data = {
            name: {k: json_number(v) for k, v in vars(a).items()} for name, a in figures.items()
        }
        scale = {"scores": {name: list(levels(name)) for name in figures}, **FIGURE_SCALES}
        document = {"experiment": experiment, "candidates": len(pairs), **data}
        click.echo(json.dumps(document | {"scale": scale, "notes": notes}))
        return
    if not pairs:
        click.echo(f"no candidate of {experiment!r} is scored by both tiers yet")
        return
    table = Table(
        title=f"{experiment}: human vs auto judge ({len(pairs)} candidates)",
        caption=AGREEMENT_SCALES,
        caption_justify="left",
    )
    for column in ("criterion", "n", "weighted κ", "Krippendorff α", "exact", "within 1"):
        table.add_column(column, justify="left" if column == "criterion" else "right")
    for name, a in figures.items():
        table.add_row(
            f"{name} ({levels_text(name)})",
            str(a.n),
            _fmt(a.kappa),
            _fmt(a.alpha),
            f"{a.exact:.0%}",
            f"{a.within_1:.0%}",
        )
    Console().print(table)
    for note in notes:
        click.echo(f"note: {note}")


#: What the agreement tables' figures run over (`judge.FIGURE_SCALES`), under each table.
AGREEMENT_SCALES = (
    "κ and α: 1 is full agreement, 0 what chance gives (κ runs from −1); exact and within 1: "
    "shares of the candidates"
)


@judge_group.command("disagreements")
@options.experiment
@click.option(
    "--delta",
    type=float,
    default=1.0,
    show_default=True,
    help="Queue candidates whose tiers differ by more than this on any score.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@reveal_option
@seed_option
@options.tracking_uri
def disagreements_command(
    experiment: str,
    delta: float,
    out: Path,
    reveal: bool,
    seed: int | None,
    tracking_uri: str | None,
) -> None:
    """Write the candidates where the tiers disagree, as a judge file to re-score."""
    result = export_disagreements(
        TrackingStore(tracking_uri), experiment, delta, out, reveal=reveal, seed=seed
    )
    click.echo(
        f"{counted(result.candidates, 'candidate')} in {counted(result.runs, 'run')} differ "
        f"by more than {delta:g}: wrote {result.path}"
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


def _fmt(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"
