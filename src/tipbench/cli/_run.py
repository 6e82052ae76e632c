"""`tipbench run`: collect → auto judge → export for the human judge → compare."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tipbench._progress_events import ProgressEvents
from tipbench._words import counted
from tipbench.auto_judge import DEFAULT_JUDGE_MODEL
from tipbench.cli import _options as options
from tipbench.cli._collect import config_from_options, grid_options
from tipbench.cli._collect import report as report_collect
from tipbench.cli._compare import show_leaderboards
from tipbench.cli._judge_auto import report as report_judge
from tipbench.cli._progress import CellProgress, JudgeProgress
from tipbench.pipeline import run_pipeline


@click.command("run")
@grid_options
@click.option(
    "--judge-model",
    default=DEFAULT_JUDGE_MODEL,
    show_default=True,
    help="The automatic judge's model spec.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=options.output_file,
    help="The human judge's file [default: $TIPBENCH_HOME/judge/EXPERIMENT.json].",
)
@click.option(
    "--reveal",
    is_flag=True,
    help="Show model and prompt in the human judge's file [default: blind, shuffled].",
)
@options.min_scenarios
@options.plot
def run_command(
    tracking_uri: str | None,
    judge_model: str,
    out: Path | None,
    reveal: bool,
    min_scenarios: int,
    plot: Path | None,
    **options: object,
) -> None:
    """Run the whole pipeline: collect the grid, judge it automatically, export it for the
    human judge and show the leaderboards. Re-running the same command resumes.
    """
    config = config_from_options(options)
    events = ProgressEvents.from_environment()
    with CellProgress(events) as cells, JudgeProgress(events) as judging:
        result = run_pipeline(
            config,
            tracking_uri=tracking_uri,
            judge_model=judge_model,
            export_path=out,
            min_scenarios=min_scenarios,
            plot=plot,
            collect_progress=cells,
            judge_progress=judging,
            reveal=reveal,
            on_phase=events.phase,
        )
    events.phase("report")
    click.echo("== collect")
    report_collect(result.collect)
    click.echo("== automatic judge")
    report_judge(result.auto)
    for status in result.calibration:
        click.echo(status.describe())
    click.echo("== human judge")
    export = result.export
    apply = f"tipbench judge apply --experiment {config.experiment} {export.path}"
    scored = f", {export.scored} already scored" if export.scored else ""
    partly = f", {export.partly} partly" if export.partly else ""
    click.echo(
        f"waiting for the human judge: {counted(export.runs, 'run')} "
        f"({counted(export.candidates, 'candidate')}{scored}{partly}), in {export.path}"
    )
    if export.carried:
        click.echo(f"  kept the {export.carried} scores already in {export.path}")
    for note in export.notes:
        click.echo(f"note: {note}", err=True)
    if export.runs:
        click.echo(f"  score {export.path}, then: {apply}")
    if result.judging:
        click.echo(f"  {result.judging}")
    click.echo("== leaderboard")
    for board in result.boards:
        if board.tier == "human" and not board.rows:  # `run` exported the file: say where
            click.echo(
                f"no human-judged runs in experiment {config.experiment!r} yet: score "
                f"{export.path} (or on the judging page of `tipbench serve`), then: {apply}"
            )
        else:
            show_leaderboards([board])
    if result.chart is not None:
        click.echo(f"chart: {result.chart}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    sys.exit(result.exit_code)
