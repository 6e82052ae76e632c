"""Options that several commands share, defined once."""

from __future__ import annotations

import os
from pathlib import Path

import click

from tipbench.auto_judge import DEFAULT_MIN_KAPPA
from tipbench.backends import (
    DEFAULT_OLLAMA_URL,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_STRUCTURED,
    STRUCTURED_MODES,
)
from tipbench.collect import DEFAULT_EXPERIMENT
from tipbench.compare import DEFAULT_MIN_SCENARIOS

# Config fields whose option is not `--` + the field name with dashes.
_OPTION_OF_FIELD = {
    "use_cache": "--no-cache",
    "genai_records": "--no-genai-records",
    "reward_window_s": "--reward-window",
    "retention_s": "--retention",
}


def option_name(field: str) -> str:
    """The option a config field is set with, as the user types it (`--n-scenarios`)."""
    return _OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))


experiment = click.option(
    "--experiment", default=DEFAULT_EXPERIMENT, show_default=True, help="MLflow experiment."
)
state_url = click.option(
    "--state-url",
    envvar="TIPBENCH_POLICY_STATE_URL",
    default=None,
    help="sqlite:///PATH or postgresql://USER@HOST/DB (replicas share one) "
    "[default: a SQLite file in $TIPBENCH_HOME].",
)
tracking_uri = click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    show_envvar=True,
    default=None,
    help="MLflow tracking URI [default: a SQLite store in $TIPBENCH_HOME].",
)
ollama_url = click.option(
    "--ollama-url",
    envvar="OLLAMA_HOST",
    show_envvar=True,
    default=DEFAULT_OLLAMA_URL,
    show_default=True,
    help="Ollama server.",
)
openai_base_url = click.option(
    "--openai-base-url",
    envvar="OPENAI_BASE_URL",
    show_envvar=True,
    default=None,
    help=f"Base URL of an OpenAI-compatible server (…/v1) [default: {DEFAULT_OPENAI_BASE_URL}].",
)
max_model_b = click.option(
    "--max-model-b",
    type=float,
    default=4.0,
    show_default=True,
    help="Refuse models above this many billion parameters.",
)
allow_unknown_size = click.option(
    "--allow-unknown-size", is_flag=True, help="Run models whose size no metadata tells."
)
suite = click.option(
    "--suite",
    type=click.Path(),
    default=None,
    help="A suite folder [default: the bundled 'tips' suite].",
)
min_scenarios = click.option(
    "--min-scenarios",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_SCENARIOS,
    show_default=True,
    help="Judged scenarios a cell needs to be ranked.",
)


def output_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Check an output file's path before any work: its folder is made, and must be writable.

    A click callback: a bad path is a usage error (one line, exit 2) before anything runs.
    """
    if value is None:
        return None
    if value.is_dir():
        raise click.BadParameter(f"{value} is a folder, not a file", ctx, param)
    folder = value.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot create the folder {folder}: {exc.strerror or exc}", ctx, param
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK) or (
        value.exists() and not os.access(value, os.W_OK)
    ):
        raise click.BadParameter(f"{value} cannot be written", ctx, param)
    return value


plot = click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=output_file,
    help="Also draw the leaderboards as a PNG chart into this file (its folder is created).",
)
min_kappa = click.option(
    "--min-kappa",
    type=click.FloatRange(min=-1.0, max=1.0),
    default=DEFAULT_MIN_KAPPA,
    show_default=True,
    help="Calibration κ each 1-5 criterion needs for the automatic judge to count.",
)
structured = click.option(
    "--structured",
    type=click.Choice(STRUCTURED_MODES),
    default=DEFAULT_STRUCTURED,
    show_default=True,
    help="Constrained output: auto = per model, generate freely and ask again with the JSON "
    "schema only when the answer does not parse, or ask with the schema first where that "
    "is faster (the judge: the schema); schema / json = always constrain (to the schema / "
    "to some JSON object); off = never.",
)
