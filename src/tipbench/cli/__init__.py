"""The `tipbench` command line: thin commands that parse, call the library and render."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import click
from pydantic import ValidationError

from tipbench import __version__
from tipbench._errors import TipbenchError
from tipbench._redact import redact_text
from tipbench.cli._airflow import airflow_group
from tipbench.cli._collect import collect_command
from tipbench.cli._compare import compare_command
from tipbench.cli._judge import judge_group
from tipbench.cli._policy import policy_group
from tipbench.cli._promote import promote_command
from tipbench.cli._run import run_command
from tipbench.cli._serve import serve_command


@click.group()
@click.version_option(__version__, prog_name="tipbench")
def cli() -> None:
    """Choose, judge and promote the small LLM and prompt that write short personal tips."""


cli.add_command(airflow_group)
cli.add_command(collect_command)
cli.add_command(compare_command)
cli.add_command(judge_group)
cli.add_command(policy_group)
cli.add_command(promote_command)
cli.add_command(run_command)
cli.add_command(serve_command)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM (e.g. a cancelled job) stops as cleanly as Ctrl-C


def main() -> None:
    """Entry point: one-line errors and meaningful exit codes for every command."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli.main(standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):  # click turns Ctrl-C into Abort
        click.echo("interrupted: re-run the same command to resume", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "config"
        message = error["msg"].removeprefix("Value error, ")
        click.echo(f"error: {field}: {redact_text(message)}", err=True)
        sys.exit(2)
    except TipbenchError as exc:
        click.echo(f"error: {redact_text(str(exc))}", err=True)
        sys.exit(2)
