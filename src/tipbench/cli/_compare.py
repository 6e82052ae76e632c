"""`tipbench compare`: phase C, the leaderboard of an experiment."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import click
from rich.console import Console

from tipbench._errors import ConfigError, TrackingError
from tipbench.cli import _options as options
from tipbench.compare import (
    BOARD_TIERS,
    FORMATS,
    BoardTier,
    Format,
    Leaderboard,
    empty_message,
    leaderboard_warnings,
    leaderboards_for,
    log_leaderboard,
    plot_leaderboards,
    render,
    table,
)
from tipbench.tracking import TrackingStore, check_experiment

_WIDE = 200  # table width when stdout is not a terminal and COLUMNS is not set


def _width() -> int:
    """The width to fit the table to: `COLUMNS` if set (piped output too), else the
    terminal's, else wide (a pipe or a log file)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return _WIDE


@click.command("compare")
@options.experiment
@click.option(
    "--tier",
    type=click.Choice([*BOARD_TIERS, "both", "online"]),
    default="both",
    show_default=True,
    help="Whose scores rank the cells: the human judge, the automatic judge, both "
    "combined (the judge's scores corrected by the human's), or each of the three; online: "
    "what users did with each cell's tips (the policy service's decision log), with the "
    "rubric's agreement.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@options.plot
@options.min_scenarios
@options.tracking_uri
@click.option(
    "--decision-log",
    "decision_log",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="--tier online: a decision log exported with `policy log export` [default: the "
    "policy state].",
)
@options.state_url
@click.option(
    "--log/--no-log",
    default=False,
    show_default=True,
    help="Also record the leaderboard as a run of the experiment in MLflow.",
)
def compare_command(
    experiment: str,
    tier: str,
    fmt: str,
    plot: Path | None,
    min_scenarios: int,
    tracking_uri: str | None,
    decision_log: Path | None,
    state_url: str | None,
    log: bool,
) -> None:
    """Rank the (model, prompt) cells of an experiment by mean composite.

    Per cell: the mean composite and rubric scores (each scenario weighs the same), a 95%
    interval, and a comparison with the leader paired by scenario. The combined tier adds
    the human-scored runs used and what they are worth, and each comparison's anytime-valid
    confidence sequence. Looking changes nothing: `--log` also records the leaderboard as a
    run of the experiment.

    The online tier ranks each (model, prompt) by the value of serving its tips, estimated
    off-policy from the decision log (doubly robust, 95% intervals, effective sample size;
    "not enough traffic" where the log cannot tell), and shows how each judged tier's
    criteria agree with it.
    """
    tiers = BOARD_TIERS if tier in ("both", "online") else (cast(BoardTier, tier),)
    check_experiment(tracking_uri, experiment)  # a typo is answered before MLflow loads
    store = TrackingStore(tracking_uri)
    if tier == "online":
        from tipbench.cli._compare_online import show_online_tier

        if plot is not None or log:
            raise ConfigError("--tier online prints a table or JSON: drop --plot and --log")
        show_online_tier(store, experiment, decision_log, state_url, fmt, min_scenarios)
        return
    if decision_log is not None:  # (--state-url may come from the environment: not refused)
        raise ConfigError("--decision-log goes with --tier online")
    boards = leaderboards_for(store, experiment, tiers, min_scenarios)
    judged = [board for board in boards if board.rows]
    if judged or fmt != "table":  # JSON and CSV stay machine-readable when empty
        show_leaderboards(boards, cast(Format, fmt))
    if not judged:
        # Judged runs the combined tier cannot use yet: say why (its judging message).
        why = [
            empty_message(board) for board in boards if board.tier == "combined" and board.n_runs
        ]
        click.echo(
            "\n".join(why)
            or f"nothing to compare: no judged runs in experiment {experiment!r} "
            "(run tipbench judge auto, or judge export / judge apply)",
            err=True,
        )
        return
    if plot is not None:
        plot_leaderboards(judged, plot)
        click.echo(f"chart: {plot}", err=True)
    if log:
        try:
            experiment_id = store.experiment_id(experiment)
            run_id = log_leaderboard(store, experiment_id, judged, plot)
        except TrackingError as exc:  # the leaderboard is printed; logging is best effort
            click.echo(f"warning: leaderboard not logged: {exc}", err=True)
        else:
            click.echo(f"logged to MLflow: run {run_id} in {experiment!r}", err=True)


def show_leaderboards(boards: Sequence[Leaderboard], fmt: Format = "table") -> None:
    """Print leaderboards on stdout.

    As a table per tier (a tier without judged runs says so), or all of them as JSON, CSV
    or Markdown.
    """
    if fmt != "table":
        click.echo(render(boards, fmt), nl=False)
        for board in boards:  # the table shows them as notes
            for warning in leaderboard_warnings(board):
                click.echo(f"warning: {board.tier} tier: {warning}", err=True)
        return
    width = _width()
    console = Console(width=width)
    for board in boards:
        if board.rows:
            console.print(table(board, width))
        else:
            console.print(empty_message(board), markup=False, highlight=False)
