"""What each task of the `prompt_optimize` DAG does: plain functions over `tipbench.optimize`
and `bench_collect`'s own phases; JSON-able values in and out (they travel as XComs).

`plan` validates the conf and checks the optimization's input without writing anything (the
same checks and one-line messages as `tipbench optimize`); `propose` runs one round of
proposals: the optimization resumed up to that round's share of the budget (a retried round
resumes from its last finished iteration, as after Ctrl-C); `heldout_conf` turns the last
round's shortlist into a `bench_collect` conf for the held-out scenarios, whose tasks
(`_phases.plan`, `collect_model`, …, `promotion_gate`) then run it as they run any grid.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError, field_validator

from tipbench._errors import ConfigError
from tipbench._progress_events import ProgressEvents, StepCounter
from tipbench._redact import redact_uri
from tipbench.optimize import OptimizeRequest
from tipbench.orchestration._conf import one_line
from tipbench.orchestration._store import run_store, task_store

if TYPE_CHECKING:
    from tipbench.optimize import Cost, IterationSummary, Skipped
    from tipbench.suite import PromptVersion

PROMPT_OPTIMIZE = "prompt_optimize"
#: The proposal rounds: each a task that spends its share of the budget.
ROUNDS = 3
logger = logging.getLogger("tipbench.orchestration")
_EVENTS = ProgressEvents.to_logger(logger)


_HELDOUT_SERVERS = (
    "not a key of this DAG: its held-out grid runs on bench_collect's tasks, which reach the "
    "task model and the judge through ollama_url (or the workers' OPENAI_BASE_URL)"
)


class OptimizeConf(OptimizeRequest):
    """`dag_run.conf` of `prompt_optimize`: an optimization request (`tipbench optimize`'s
    keys on tipbench's working copy of the suite), and where to track it."""

    mlflow_url: str | None = Field(
        default=None, description="MLflow tracking URI [default: the deployment's store]."
    )
    reflection_url: str | None = Field(
        default=None,
        max_length=2048,
        description="The reflection model's server, if not the shared one: an "
        "OpenAI-compatible base URL or an Ollama host, as its spec says.",
    )
    model_url: str | None = Field(default=None, description=_HELDOUT_SERVERS)
    judge_url: str | None = Field(default=None, description=_HELDOUT_SERVERS)

    @field_validator("model_url", "judge_url", mode="before")
    @classmethod
    def _shared_servers(cls, value: object) -> None:
        """Refused in `plan` with this DAG's reason (a Param of type null would answer only
        "not of type 'null'")."""
        if value not in (None, ""):
            raise ValueError(_HELDOUT_SERVERS)
        return None


def read_optimize_conf(values: dict[str, Any]) -> OptimizeConf:
    """Validate a run's conf, with the CLI's one-line message on bad input.

    Raises:
        ConfigError: `field: problem`, naming the first bad key.
    """
    try:
        return OptimizeConf.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


def round_budgets(budget: int, minimum: int) -> list[int]:
    """The budget spent by the end of each round: equal shares, at least one iteration."""
    return [max(minimum, math.ceil(budget * (r + 1) / ROUNDS)) for r in range(ROUNDS)]


def plan(values: dict[str, Any]) -> dict[str, Any]:
    """Validate the conf and check the optimization's input; nothing is written.

    Returns:
        The work order of every round: `conf` (validated), `tracking_uri`, `budgets`.
    """
    from tipbench.optimize import iteration_cost, prepare

    conf = read_optimize_conf(values)
    prepared = prepare(conf.optimization())
    uri = run_store(conf.mlflow_url)
    logger.info(
        "plan: %s; %s evaluations in %d rounds into %s at %s",
        prepared.split.describe(),
        conf.budget,
        ROUNDS,
        conf.experiment,
        redact_uri(uri),
    )
    minimum = iteration_cost(len(prepared.split.training), conf.minibatch)
    return {
        "conf": conf.model_dump(mode="json"),
        "tracking_uri": uri,
        "budgets": round_budgets(conf.budget, minimum),
    }


def propose(order: dict[str, Any], round_number: int) -> dict[str, Any]:
    """Round `round_number` (from 1): the optimization continued up to its budget."""
    from tipbench.optimize import optimize

    conf = OptimizeConf.model_validate(order["conf"])
    budget = int(order["budgets"][round_number - 1])
    config = conf.optimization().model_copy(update={"budget": budget, "heldout": False})
    _EVENTS.phase("optimize")
    result = optimize(config, tracking_uri=task_store(order["tracking_uri"]), progress=_Log())
    final = result.final
    logger.info(
        "round %d: %d evaluations, best training score %.2f (%s); shortlist: %s",
        round_number,
        final.evaluations,
        final.best.mean,
        final.best.version,
        ", ".join(p.version for p in result.shortlist) or "empty",
    )
    return {
        "round": round_number,
        "iteration": final.iteration,
        "evaluations": final.evaluations,
        "start": result.start,
        "shortlist": [p.version for p in result.shortlist],
        "heldout": list(result.split.heldout),
        "run_id": result.run_id,
    }


def heldout_conf(order: dict[str, Any], last: dict[str, Any]) -> dict[str, Any] | None:
    """`bench_collect`'s conf for the start and the shortlist on the held-out scenarios, in
    the held-out experiment (None: the shortlist is empty, there is nothing to hold out)."""
    if not last["shortlist"]:
        return None
    conf = OptimizeConf.model_validate(order["conf"])
    return {
        "models": conf.model,
        "prompts": ",".join([last["start"], *last["shortlist"]]),
        "scenarios": ",".join(last["heldout"]),
        "working_suite": True,
        "experiment": conf.optimization().heldout_name,
        "judge_model": conf.judge_model,
        "n_tips": conf.n_tips,
        "temperature": conf.temperature,
        "max_model_b": conf.max_model_b,
        "ollama_url": conf.ollama_url,
        "structured": conf.structured,
        "mlflow_url": order["tracking_uri"],
    }


class _Log:
    """An `OptimizeProgress` for a task's log: the budget as progress events, iterations,
    proposals and skipped proposals as lines."""

    def __init__(self) -> None:
        self.steps = StepCounter("evaluations", _EVENTS)

    def begin(self, total: int, done: int) -> None:
        self.steps.begin(total, done)

    def advance(self, label: str, error: str | None = None, count: int = 1) -> None:
        self.steps.step(label, error, count)

    def note(self, message: str) -> None:
        logger.debug("%s", message)

    def iteration(self, summary: IterationSummary) -> None:
        logger.info(
            "iteration %d: best training score %.2f (%s), %d evaluations spent",
            summary.iteration,
            summary.best.mean,
            summary.best.version,
            summary.evaluations,
        )

    def proposed(self, prompt: PromptVersion) -> None:
        if prompt.proposal is not None:
            logger.info(
                "proposed %s: a new %s template for %s",
                prompt.version,
                prompt.proposal.component,
                prompt.proposal.parent,
            )

    def skipped(self, skipped: Skipped) -> None:
        logger.info("skipped a proposal: %s", skipped.describe())

    def planned(self, cost: Cost) -> None:
        for line in cost.lines():
            logger.info("%s", line)
