"""The `tipbench` command line: thin commands that parse, call the library and render."""

from __future__ import annotations

import gc
import importlib
import signal
import sys
from types import FrameType
from typing import NoReturn

import click
from pydantic import ValidationError

from tipbench import __version__
from tipbench._errors import TipbenchError
from tipbench._progress_events import ErrorReported, Finished, ProgressEvents
from tipbench._redact import redact_text

# Each command's module is imported only when that command runs (or its help is shown), so
# a small command does not pay for the imports of the others (the model backends, the
# server, numpy and rich for leaderboards).
_COMMANDS = {
    "airflow": "tipbench.cli._airflow:airflow_group",
    "collect": "tipbench.cli._collect:collect_command",
    "compare": "tipbench.cli._compare:compare_command",
    "judge": "tipbench.cli._judge:judge_group",
    "optimize": "tipbench.cli._optimize:optimize_command",
    "policy": "tipbench.cli._policy:policy_group",
    "promote": "tipbench.cli._promote:promote_command",
    "run": "tipbench.cli._run:run_command",
    "serve": "tipbench.cli._serve:serve_command",
    "serve-model": "tipbench.cli._serve_model:serve_model_command",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="tipbench")
def cli() -> None:
    """Choose, judge and promote the small LLM and prompt that write short personal tips."""


#: The garbage collector's thresholds while a command works, as mypy sets them: importing
#: MLflow leaves hundreds of thousands of long-lived objects, which Python's own thresholds
#: have the collector scan over and over (0.8 s of CPU in a collect of 24 cells; 0.1 s so).
_COMMAND_GC_THRESHOLD = (200_000, 30, 30)
_PYTHON_GC_THRESHOLD = gc.get_threshold()


def serving() -> None:
    """Give a server's process Python's own collector thresholds back: a request never waits
    for a collection of 200,000 young objects."""
    gc.set_threshold(*_PYTHON_GC_THRESHOLD)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM (e.g. a cancelled job) stops as cleanly as Ctrl-C


def main() -> None:
    """Entry point: one-line errors and meaningful exit codes for every command; with
    `TIPBENCH_PROGRESS_EVENTS`, that line and the exit code are progress events too."""
    signal.signal(signal.SIGTERM, _terminate)
    events = ProgressEvents.from_environment()
    try:
        _main(events)
    except SystemExit as exc:
        code = exc.code
        events.emit(Finished(exit_code=code if isinstance(code, int) else 0 if code is None else 1))
        raise
    events.emit(Finished(exit_code=0))


def run() -> NoReturn:
    """The `tipbench` command: `main`, then an exit that skips the garbage collector.

    At exit the interpreter looks for reference cycles among every object still alive (the
    objects of MLflow, SQLAlchemy and the model clients): about two seconds after a collect.
    Once the command is done those objects are frozen, out of the collector's sight, and the
    exit runs as usual (threads waited for, exit handlers run, output flushed) in about a
    tenth of a second.
    """
    gc.set_threshold(*_COMMAND_GC_THRESHOLD)
    try:
        main()
        code: str | int | None = 0
    except SystemExit as exc:
        code = exc.code
    gc.freeze()
    sys.exit(code)


def _main(events: ProgressEvents) -> None:
    try:
        cli.main(standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):  # click turns Ctrl-C into Abort
        _fail(events, "interrupted: re-run the same command to resume", 130)
    except click.UsageError as exc:  # one line, as for every other bad input
        command = exc.ctx.command_path if exc.ctx is not None else "tipbench"
        _fail(events, f"error: {exc.format_message()} (see {command} --help)", exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        events.emit(ErrorReported(message=f"Error: {exc.format_message()}"))
        sys.exit(exc.exit_code)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "config"
        if exc.title.endswith("Config") and error["loc"]:  # a command's options, as typed
            from tipbench.cli._options import option_name

            field = option_name(str(error["loc"][0]))
        message = error["msg"].removeprefix("Value error, ")
        _fail(events, f"error: {field}: {redact_text(message)}", 2)
    except TipbenchError as exc:
        _fail(events, f"error: {redact_text(str(exc))}", 2)


def _fail(events: ProgressEvents, line: str, exit_code: int) -> NoReturn:
    """End with `line` on stderr (and as the run's error event) and `exit_code`."""
    click.echo(line, err=True)
    events.emit(ErrorReported(message=line))
    sys.exit(exit_code)
