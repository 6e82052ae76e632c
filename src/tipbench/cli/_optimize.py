"""`tipbench optimize`: GEPA proposes prompt versions on training scenarios; the shortlist
then runs on held-out scenarios, where only the gate can promote."""

from __future__ import annotations

import sys

import click

from tipbench._progress_events import ProgressEvents
from tipbench._redact import redact_uri
from tipbench._words import counted
from tipbench.cli import _options as options
from tipbench.cli._progress import CellProgress, JudgeProgress, _BarProgress
from tipbench.optimize import (
    Cost,
    IterationSummary,
    OptimizationResult,
    OptimizeConfig,
    Skipped,
    optimize,
    skipped_by_reason,
)
from tipbench.suite import PromptVersion

_FIELDS = OptimizeConfig.model_fields


def _default(name: str) -> object:
    """An option's default: the settings' own (`OptimizeConfig`), the one home of each."""
    return _FIELDS[name].default


class OptimizeBar(_BarProgress):
    """An `OptimizeProgress`: a bar over the budget's evaluations, a line per iteration."""

    title, unit, done_word = "optimize", "evaluations", "spent"
    budget = 0

    def begin(self, total: int, done: int) -> None:
        self.budget = total
        super().begin(total, done)

    def advance(self, label: str, error: str | None = None, count: int = 1) -> None:
        self._step(label, error, count=count)

    def planned(self, cost: Cost) -> None:
        for line in cost.lines():  # whole lines: read before anything is spent
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def iteration(self, summary: IterationSummary) -> None:
        best = summary.best
        speed = summary.seconds_per_evaluation
        self._line(
            f"iteration {summary.iteration}: best training score {best.mean:.2f} "
            f"({best.version}), {counted(len(summary.programs), 'version')} in the pool, "
            f"{summary.evaluations} / {self.budget} evaluations spent"
            + (f" ({speed:.1f} s per evaluation)" if speed is not None else "")
        )

    def proposed(self, prompt: PromptVersion) -> None:
        if (proposal := prompt.proposal) is not None:
            self._line(
                f"  proposed {prompt.version}: a new {proposal.component} template for "
                f"{proposal.parent}"
                + (f" ({proposal.reasons.splitlines()[0]})" if proposal.reasons else "")
            )

    def skipped(self, skipped: Skipped) -> None:
        self._line(f"  skipped a proposal: {skipped.problem}")


@click.command("optimize")
@click.option("--from", "from_version", required=True, help="The prompt version to start from.")
@click.option("--model", required=True, help="The model whose prompt is optimized (a spec).")
@click.option(
    "--reflection-model",
    default=_default("reflection_model"),
    show_default=True,
    help="The model that proposes new versions: one of 3B or more is useful (SPEC@3B declares "
    "the size of a model its server does not report); the bundled 135M model only shows the "
    "mechanics.",
)
@click.option(
    "--judge-model",
    default=_default("judge_model"),
    show_default=True,
    help="The automatic judge that scores training scenarios.",
)
@click.option(
    "--budget",
    type=int,
    required=True,
    help="Evaluations to spend: one prompt version on one training scenario, collected and judged.",
)
@click.option(
    "--train-scenarios",
    default=_default("train_scenarios"),
    help="N (drawn with --seed) or comma-separated scenario ids [default: all but the "
    "scenarios the gate needs held out, at most half].",
)
@click.option("--seed", type=int, default=_default("seed"), show_default=True)
@click.option(
    "--shortlist",
    type=int,
    default=_default("shortlist"),
    show_default=True,
    help="At most this many proposals go on to the held-out scenarios.",
)
@click.option(
    "--minibatch",
    type=int,
    default=_default("minibatch"),
    show_default=True,
    help="Training scenarios per reflection.",
)
@click.option("--n-tips", type=int, default=_default("n_tips"), show_default=True)
@click.option("--temperature", type=float, default=_default("temperature"), show_default=True)
@click.option(
    "--experiment",
    default=_default("experiment"),
    show_default=True,
    help="MLflow experiment of the training evaluations.",
)
@click.option(
    "--heldout-experiment",
    default=None,
    help="MLflow experiment of the held-out grid [default: EXPERIMENT-heldout].",
)
@click.option("--no-heldout", is_flag=True, help="Stop after the shortlist.")
@options.max_model_b
@options.allow_unknown_size
@options.structured
@click.option(
    "--suite",
    default=None,
    help="The suite folder proposals are written into [default: a copy of the bundled "
    "suite in $TIPBENCH_HOME/suites/tips].",
)
@options.ollama_url
@options.openai_base_url
@click.option(
    "--model-url",
    default=None,
    help="The server of --model, if not the shared one: an OpenAI-compatible base URL "
    "(…/v1) or an Ollama host, as its spec's backend says [default: --openai-base-url or "
    "--ollama-url].",
)
@click.option("--judge-url", default=None, help="The server of --judge-model (as --model-url).")
@click.option(
    "--reflection-url",
    default=None,
    help="The server of --reflection-model (as --model-url): a larger model on another "
    "machine, say.",
)
@options.tracking_uri
def optimize_command(
    tracking_uri: str | None, no_heldout: bool, openai_base_url: str | None, **values: object
) -> None:
    """Propose new versions of a prompt with GEPA (a reflection model reads the judge's
    scores of its tips and rewrites it) on training scenarios, then run the shortlist and
    the start on held-out scenarios for the gate. Re-running the same command resumes.
    """
    config = settings(no_heldout=no_heldout, openai_base_url=openai_base_url, **values)
    events = ProgressEvents.from_environment()
    events.phase("optimize")
    with (
        OptimizeBar(events) as bar,
        CellProgress(events) as cells,
        JudgeProgress(events) as judging,
    ):
        result = optimize(
            config,
            tracking_uri=tracking_uri,
            progress=bar,
            collect_progress=cells,
            judge_progress=judging,
        )
    events.phase("report")
    report(result)
    sys.exit(_exit_code(result))


def settings(*, no_heldout: bool, openai_base_url: str | None, **values: object) -> OptimizeConfig:
    """The optimization the options ask for (`OptimizeConfig.cli_args` is the way back).

    Raises:
        pydantic.ValidationError: A value out of its bounds, named.
    """
    return OptimizeConfig.model_validate(
        {**values, "heldout": not no_heldout, "openai_base_url": openai_base_url}
    )


def report(result: OptimizationResult) -> None:
    """Print the split, the lineage, the shortlist and what the gate needs next."""
    out = click.echo
    out(f"== optimize {result.start} (optimization {result.optimization})")
    out(result.split.describe())
    final = result.final
    out(
        f"{final.evaluations} evaluations, {counted(final.iteration, 'iteration')}, "
        f"{counted(len(result.proposals), 'proposal')}, "
        f"{counted(len(result.skipped), 'skipped proposal')}"
    )
    out(result.spent())
    out("== lineage (mean training score, on how many training scenarios)")
    for row in result.lineage:
        out(f"  {row.describe()}")
        for line in row.diff.splitlines()[2:]:  # the hunks: the names are on the row
            out(f"  {'  ' * row.depth}  {line}")
    for skipped in result.skipped:
        out(f"  {skipped.describe()}")
    if result.skipped:
        counts = skipped_by_reason(result.skipped)
        out("skipped proposals by reason: " + ", ".join(f"{n} {why}" for why, n in counts.items()))
    out(f"written to {result.suite / 'prompts'}; MLflow run {result.run_id}")
    out("== shortlist")
    if not result.shortlist:
        out(
            f"no proposal did better than {result.start} on the training scenarios: nothing to "
            "hold out"
        )
    for program in result.shortlist:
        out(f"  {program.version}: {program.mean:.2f} on the training scenarios")
    if result.shortlist:
        out(
            "training scores overstate: the best of many versions scored on the same "
            "scenarios looks better than it is; the held-out scenarios decide"
        )
    for warning in result.warnings:
        out(f"warning: {warning}", err=True)
    if result.heldout is not None:
        _report_heldout(result)


def _report_heldout(result: OptimizationResult) -> None:
    out = click.echo
    heldout = result.heldout
    assert heldout is not None
    pipeline = heldout.pipeline
    out(
        f"== held-out grid: {', '.join(heldout.prompts)} on "
        f"{counted(len(result.split.heldout), 'held-out scenario')} "
        f"(experiment {heldout.experiment})"
    )
    out(
        f"{pipeline.collect.succeeded} cells collected, {pipeline.collect.skipped} already "
        f"recorded, {len(pipeline.collect.failed)} failed; "
        f"{pipeline.auto.judged} auto-judged"
    )
    export = pipeline.export
    apply = f"tipbench judge apply --experiment {heldout.experiment} {export.path}"
    out(
        f"waiting for the human judge: {counted(export.runs, 'run')} in {export.path}; "
        f"then: {apply}"
    )
    decision = heldout.gate.decision
    out("== gate (a dry run, held-out scenarios only)")
    verdict = "PROMOTE" if decision.promote else "REFUSE"
    out(f"{verdict} {decision.prompt_version or 'nothing yet'}: {decision.decided_how()}")
    for condition in decision.conditions:
        out(f"  [{'x' if condition.passed else ' '}] {condition.name}: {condition.figure}")
    out(
        f"to act once people have judged: tipbench promote --experiment {heldout.experiment} "
        f"--suite {result.suite} --apply"
    )
    out(f"store: {redact_uri(pipeline.collect.tracking_uri)}")


def _exit_code(result: OptimizationResult) -> int:
    return result.heldout.pipeline.exit_code if result.heldout is not None else 0
