"""`tipbench judge …`: the human tier's file round trip, and the two tiers compared."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from tipbench._errors import ConfigError
from tipbench.cli import _options as options
from tipbench.cli._judge_auto import auto_command
from tipbench.cli._judge_calibrate import calibrate_command
from tipbench.judge import (
    ExportResult,
    apply_judge_file,
    export_disagreements,
    export_pending,
    scored_pairs,
    tier_agreement,
)
from tipbench.orchestration import announce_judged
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
    carried = f", {result.carried} of them carried over from the file" if result.carried else ""
    click.echo(
        f"exported {result.runs} runs ({result.candidates} candidates{scored}{carried}) "
        f"to {result.path}"
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


@judge_group.command("export")
@options.experiment
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@reveal_option
@seed_option
@options.tracking_uri
def export_command(
    experiment: str, out: Path, reveal: bool, seed: int | None, tracking_uri: str | None
) -> None:
    """Write every run still waiting for the human judge into one JSON file.

    Scores already in the file are carried over. Judging is blind: the file shows no model
    or prompt version and lists items and candidates in a seeded shuffled order.
    """
    check_experiment(tracking_uri, experiment)  # a typo is answered before MLflow loads
    result = export_pending(TrackingStore(tracking_uri), experiment, out, reveal=reveal, seed=seed)
    report_export(result)
    if result.runs:
        click.echo(
            f"fill in the scores, then: tipbench judge apply --experiment {experiment} {out}"
        )


@judge_group.command("apply")
@options.experiment
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--judge",
    default=None,
    help="Who scored [default: the file's judge, else $TIPBENCH_JUDGE, else your user name].",
)
@options.tracking_uri
def apply_command(experiment: str, file: Path, judge: str | None, tracking_uri: str | None) -> None:
    """Validate a judge file as a whole, then record the scores of completely scored runs."""
    if not file.is_file():  # answered before MLflow loads, like an unknown experiment
        raise ConfigError(f"{file}: no such file")
    check_experiment(tracking_uri, experiment)
    store = TrackingStore(tracking_uri)
    result = apply_judge_file(store, experiment, file, judge)
    click.echo(
        f"applied {result.applied} runs, {result.unchanged} unchanged, "
        f"{result.incomplete} not completely scored yet"
    )
    for pending in result.pending:
        click.echo(
            f"  not complete yet: {pending.item}: {pending.scored} of {pending.total} "
            "candidates scored (kept as a draft; the run stays pending)"
        )
    for run_id, error in result.failed:
        click.echo(f"  not written: run {run_id}: {error}", err=True)
    if result.applied and (warning := announce_judged(experiment, store.uri)):
        click.echo(f"warning: {warning}", err=True)
    sys.exit(result.exit_code)


@judge_group.command("agreement")
@options.experiment
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@options.tracking_uri
def agreement_command(experiment: str, fmt: str, tracking_uri: str | None) -> None:
    """How well the automatic judge agrees with the human, per criterion."""
    pairs = scored_pairs(TrackingStore(tracking_uri), experiment)
    figures = tier_agreement(pairs)
    if fmt == "json":
        data = {
            name: {k: _json_number(v) for k, v in vars(a).items()} for name, a in figures.items()
        }
        click.echo(json.dumps({"experiment": experiment, "candidates": len(pairs), **data}))
        return
    if not pairs:
        click.echo(f"no candidate of {experiment!r} is scored by both tiers yet")
        return
    table = Table(title=f"{experiment}: human vs auto judge ({len(pairs)} candidates)")
    for column in ("criterion", "n", "weighted κ", "Krippendorff α", "exact", "within 1"):
        table.add_column(column, justify="left" if column == "criterion" else "right")
    for name, a in figures.items():
        table.add_row(
            name, str(a.n), _fmt(a.kappa), _fmt(a.alpha), f"{a.exact:.0%}", f"{a.within_1:.0%}"
        )
    Console().print(table)


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
        f"{result.candidates} candidates in {result.runs} runs differ by more than {delta:g}: "
        f"wrote {result.path}"
    )


def _json_number(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


def _fmt(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"
