"""`tipbench collect`: phase A, the grid into MLflow."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from tipbench._redact import redact_uri
from tipbench._words import counted
from tipbench.cli import _options as options
from tipbench.cli._options import option_name
from tipbench.cli._progress import CellProgress
from tipbench.collect import (
    DEFAULT_MODELS,
    DEFAULT_PROMPTS,
    CollectConfig,
    CollectResult,
    collect,
)
from tipbench.tracking import MLFLOW_UI_PORT, mlflow_ui_command, traces_page

F = TypeVar("F", bound=Callable[..., Any])
#: Where the printed `mlflow ui` command serves.
_LOCAL_UI = f"http://127.0.0.1:{MLFLOW_UI_PORT}"


def grid_options(command: F) -> F:
    """The options that define a grid, shared by `collect` and `run`."""
    grid = [
        click.option(
            "--models",
            default=DEFAULT_MODELS,
            show_default=True,
            help="Comma-separated model specs: llamacpp:NAME|PATH.gguf, ollama:TAG "
            "(or a bare tag), openai:MODEL; '@1.5B' declares a size.",
        ),
        click.option(
            "--prompts",
            default=DEFAULT_PROMPTS,
            show_default=True,
            help="Comma-separated prompt versions of the suite.",
        ),
        options.experiment,
        click.option("--n-tips", type=int, default=5, show_default=True),
        click.option(
            "--n-scenarios",
            type=int,
            default=0,
            show_default=True,
            help="Use the first N scenarios (0 = all).",
        ),
        click.option(
            "--scenarios",
            default="",
            help="Comma-separated scenario ids, instead of the first N (e.g. an "
            "optimization's held-out scenarios).",
        ),
        click.option("--temperature", type=float, default=0.7, show_default=True),
        click.option("--seed", type=int, default=42, show_default=True),
        options.max_model_b,
        options.allow_unknown_size,
        click.option(
            "--max-tokens",
            type=int,
            default=None,
            help="Token budget per cell [default: 64 per tip + 48].",
        ),
        click.option(
            "--diversity", is_flag=True, help="Log how different each cell's candidates are."
        ),
        click.option(
            "--concurrency",
            type=int,
            default=1,
            show_default=True,
            help="Parallel requests for servers that serve them (not embedded).",
        ),
        click.option("--no-cache", is_flag=True, help="Do not reuse cached responses."),
        click.option(
            "--no-genai-records",
            is_flag=True,
            help="Record runs only: no traces, assessments or registered prompts for "
            "MLflow's GenAI views.",
        ),
        options.structured,
        options.suite,
        options.ollama_url,
        options.openai_base_url,
        options.tracking_uri,
    ]
    for option in reversed(grid):
        command = option(command)
    return command


def config_from_options(options: dict[str, object]) -> CollectConfig:
    """A validated `CollectConfig` from the grid options.

    Raises:
        click.BadParameter: naming the option as typed, for every invalid value.
    """
    values = dict(options)
    values.pop("tracking_uri", None)
    values["use_cache"] = not values.pop("no_cache", False)
    values["genai_records"] = not values.pop("no_genai_records", False)
    try:
        return CollectConfig.model_validate(values)
    except ValidationError as exc:
        problems = [
            (
                option_name(str(error["loc"][0])) if error["loc"] else "",
                error["msg"].removeprefix("Value error, "),
            )
            for error in exc.errors()
        ]
        (first, message), *others = problems
        raise click.BadParameter(
            message + "".join(f"; {option}: {text}" for option, text in others),
            ctx=click.get_current_context(silent=True),
            param_hint=f"'{first}'",
        ) from None


def report(result: CollectResult) -> None:
    """Print where the results are and what went wrong, if anything."""
    out = click.echo
    out(
        f"{counted(result.total, 'cell')}: {result.skipped} already recorded, "
        f"{result.succeeded} collected, {len(result.failed)} failed"
    )
    duplicates = result.duplicates
    if duplicates.removed_runs:
        out(
            f"repaired duplicates: {counted(duplicates.cells, 'cell')} had more than one run; "
            f"deleted {counted(duplicates.removed_runs, 'extra run')} (kept the judged, "
            "else the newest)",
            err=True,
        )
    if duplicates.removed_parents:
        out(
            f"repaired duplicates: merged {counted(duplicates.removed_parents, 'extra parent run')}"
            " into the first one",
            err=True,
        )
    for warning in result.warnings:
        out(f"warning: {warning}", err=True)
    for cell, error in result.failed:
        out(f"  failed: {cell}: {error}", err=True)
    for cell, error in result.unwritten:
        out(
            f"  not written to MLflow (re-run to retry, answers are cached): {cell}: {error}",
            err=True,
        )
    loads = ", ".join(f"{m} ×{n}" for m, n in result.model_loads.items()) or "none"
    out(f"model loads: {loads}")
    for model, path in result.paths.items():
        out(f"generation path of {model}: {path}")
    out(f"experiment '{result.experiment}' at {redact_uri(result.tracking_uri)}")
    out(f"parent run: {result.parent_run_id}")
    uri = redact_uri(result.tracking_uri)
    traces = result.genai_records and result.experiment_id
    if result.tracking_uri.startswith("sqlite:"):
        out(f"look at it: {mlflow_ui_command(uri)}")
        if traces:
            out(f"  its candidates and scores: {traces_page(_LOCAL_UI, result.experiment_id)}")
    elif traces and result.tracking_uri.startswith(("http://", "https://")):
        out(f"its candidates and scores: {traces_page(uri, result.experiment_id)}")


@click.command("collect")
@grid_options
def collect_command(tracking_uri: str | None, **options: object) -> None:
    """Run the (model × prompt × scenario) grid and record every cell in MLflow.

    Re-running the same command resumes: recorded cells are skipped, failed ones retried.
    """
    config = config_from_options(options)
    with CellProgress() as progress:
        result = collect(config, tracking_uri=tracking_uri, progress=progress)
    report(result)
    sys.exit(result.exit_code)
