"""`tipbench judge auto`: the automatic judge tier over an experiment's cell runs."""

from __future__ import annotations

import sys

import click

from tipbench._redact import redact_uri
from tipbench.auto_judge import DEFAULT_JUDGE_MODEL, AutoJudgeConfig, AutoJudgeResult, auto_judge
from tipbench.cli import _options as options
from tipbench.cli._progress import JudgeProgress
from tipbench.tracking import TrackingStore


@click.command("auto")
@options.experiment
@click.option(
    "--judge-model",
    default=DEFAULT_JUDGE_MODEL,
    show_default=True,
    help="The judge's model spec: llamacpp:NAME|PATH.gguf, ollama:TAG, openai:MODEL.",
)
@options.max_model_b
@options.allow_unknown_size
@click.option("--rejudge", is_flag=True, help="Judge already auto-judged runs again (new version).")
@options.structured
@options.suite
@options.ollama_url
@options.openai_base_url
@options.tracking_uri
def auto_command(tracking_uri: str | None, **options: object) -> None:
    """Score every candidate with an LLM judge against the rubric (auto_* metrics).

    Human scores are never touched. Re-running resumes: judged runs are skipped, failed
    ones retried.
    """
    config = AutoJudgeConfig.model_validate(options)
    store = TrackingStore(tracking_uri)
    with JudgeProgress() as progress:
        result = auto_judge(store, config, progress=progress)
    report(result)
    if result.judged:
        from tipbench.pipeline import scores_written  # compare loads only now

        after = scores_written(store, config.experiment, final=True, suite=config.suite)
        if after.refreshed:
            click.echo(f"refreshed the logged leaderboard (run {after.refreshed})")
        for warning in after.warnings:
            click.echo(f"warning: {warning}", err=True)
    sys.exit(result.exit_code)


def report(result: AutoJudgeResult) -> None:
    """Print what was judged, what failed and where the scores are."""
    out = click.echo
    runs = "run" if result.total == 1 else "runs"
    out(
        f"{result.total} {runs}: {result.skipped} already auto-judged, {result.judged} judged "
        f"({result.candidates} candidates), {len(result.failed)} failed"
    )
    for run, error in result.failed:
        out(f"  failed: {run}: {error}", err=True)
    for run, error in result.unwritten:
        out(f"  not written to MLflow (re-run to retry): {run}: {error}", err=True)
    out(f"judge model: {result.judge_model} (loaded {result.model_loads}×)")
    for warning in result.warnings:
        out(f"warning: {warning}", err=True)
    out(f"experiment '{result.experiment}' at {redact_uri(result.tracking_uri)}")
