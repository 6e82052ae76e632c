"""`tipbench judge calibrate`: how well a judge model agrees with the calibration set."""

from __future__ import annotations

import json
import math
import sys

import click
from rich.console import Console
from rich.table import Table

from tipbench._phase import PhaseConfig
from tipbench.auto_judge import (
    CALIBRATION_EXPERIMENT,
    DEFAULT_JUDGE_MODEL,
    FLAGS_NOTE,
    Calibration,
    JudgeCalibration,
    calibrate,
    log_calibration,
)
from tipbench.cli import _options as options
from tipbench.cli._progress import JudgeProgress
from tipbench.suite import CRITERIA, levels_text
from tipbench.tracking import TrackingStore


@click.command("calibrate")
@click.option(
    "--judge-model",
    default=DEFAULT_JUDGE_MODEL,
    show_default=True,
    help="The judge's model spec: llamacpp:NAME|PATH.gguf, ollama:TAG, openai:MODEL.",
)
@options.min_kappa
@options.max_model_b
@options.allow_unknown_size
@options.suite
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@options.ollama_url
@options.openai_base_url
@options.tracking_uri
def calibrate_command(
    judge_model: str,
    min_kappa: float,
    max_model_b: float,
    allow_unknown_size: bool,
    suite: str | None,
    fmt: str,
    ollama_url: str,
    openai_base_url: str | None,
    tracking_uri: str | None,
) -> None:
    """Score the suite's calibration set with a judge model and compare with agreed scores.

    Per criterion: quadratic-weighted κ, exact and within-1 agreement and the confusion
    matrix. The result is logged to MLflow (experiment 'tipbench-calibration', keyed by
    judge model, rubric and calibration-set hash); leaderboards and `promote` use it.
    """
    store = TrackingStore(tracking_uri)
    with JudgeProgress() as progress:
        config = PhaseConfig(
            suite=suite,
            max_model_b=max_model_b,
            allow_unknown_size=allow_unknown_size,
            ollama_url=ollama_url,
            openai_base_url=openai_base_url,
        )
        result = calibrate(judge_model, config, progress=progress)
    run_id = log_calibration(store, result, min_kappa)
    if fmt == "json":
        click.echo(json.dumps({**result.to_dict(min_kappa), "run_id": run_id}))
        return
    show_calibration(result, min_kappa)
    click.echo(f"logged to MLflow: run {run_id} in {CALIBRATION_EXPERIMENT!r} at {store.shown_uri}")


def show_calibration(result: Calibration, min_kappa: float) -> None:
    """The figures per criterion, the confusion matrices and the verdict."""
    console = Console(width=None if sys.stdout.isatty() else 120)
    table = Table(
        title=(
            f"{result.judge_model} on the calibration set of rubric {result.rubric_id} "
            f"({result.answered} of {result.tips} tips answered, set {result.calibration_hash})"
        ),
        caption=CALIBRATION_SCALES,
        caption_justify="left",
    )
    for column in ("criterion", "n", "weighted κ", "exact", "within 1", "counts"):
        table.add_column(column, justify="left" if column in ("criterion", "counts") else "right")
    for name, figures in result.figures.items():
        table.add_row(
            f"{name} ({levels_text(name)})",
            str(figures.n),
            _fmt(figures.kappa),
            _percent(figures.exact),
            _percent(figures.within_1),
            "yes" if name in CRITERIA else "no: the rules' flag is used",
        )
    console.print(table)
    for note in result.notes():
        click.echo(f"note: {note}")
    click.echo(f"note: {FLAGS_NOTE}")
    click.echo("confusion (rows: agreed score, columns: the judge's score)")
    for name, figures in result.figures.items():
        width = len(name) + 1  # the counts line up under their column's label
        click.echo(f"  {name + ':':<{width}}" + "".join(f"{label:>4}" for label in figures.labels))
        for label, row in zip(figures.labels, figures.confusion, strict=True):
            click.echo(f"  {label:>{width}}" + "".join(f"{n:>4}" for n in row))
    for tip, error in result.failed:
        click.echo(f"  not scored: {tip}: {error}", err=True)
    status = JudgeCalibration(
        result.judge_model,
        result.rubric_id,
        min_kappa,
        result.kappas(),
        result.answered,
        result.tips,
    )
    click.echo(status.describe())


#: What the calibration table's figures run over (`judge.FIGURE_SCALES`), under the table.
CALIBRATION_SCALES = (
    "κ: 1 is full agreement with the agreed scores, 0 what chance gives (it runs from −1); "
    "exact and within 1: shares of the tips answered"
)


def _fmt(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def _percent(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0%}"
