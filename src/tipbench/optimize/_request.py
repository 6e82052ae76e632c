"""An optimization asked for from outside a shell: the admin panel's job
(`admin.OptimizationJobRequest`) and the `prompt_optimize` DAG's conf
(`orchestration.OptimizeConf`) both extend `OptimizeRequest`, as the bench's job and DAG
extend `pipeline.RunRequest`.

`tipbench optimize` asks a shell for a start version, a model and a budget; a request gives
them defaults (the Optimize page's form and the DAG's Params show them), runs on tipbench's
working copy of the bundled suite (a folder path never comes from the web or a conf), and
names a `tip-bench-*` experiment, as every bench job does. It runs as the command line
`OptimizeConfig.cli_args` builds.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from tipbench.collect import BENCH_EXPERIMENT_PATTERN, DEFAULT_MODELS
from tipbench.optimize._config import DEFAULT_OPTIMIZE_EXPERIMENT, OptimizeConfig

#: The version a request starts from, unless it says.
DEFAULT_START = "v1"
#: The evaluations a request spends, unless it says.
DEFAULT_REQUEST_BUDGET = 40


class OptimizeRequest(OptimizeConfig):
    """`tipbench optimize`'s keys, each with a default, on the working copy of the suite, in a
    `tip-bench-*` experiment."""

    experiment: str = Field(
        default=DEFAULT_OPTIMIZE_EXPERIMENT,
        description="The MLflow experiment of the training evaluations, a `tip-bench-*` name "
        "(the held-out grid goes to EXPERIMENT-heldout).",
    )
    from_version: str = Field(
        default=DEFAULT_START, min_length=1, max_length=64, description="The start version."
    )
    model: str = Field(
        default=DEFAULT_MODELS, min_length=1, max_length=200, description="The task model."
    )
    budget: int = Field(
        default=DEFAULT_REQUEST_BUDGET, ge=1, le=100_000, description="Evaluations to spend."
    )
    suite: None = None

    @field_validator("experiment")
    @classmethod
    def _bench_experiment(cls, value: str) -> str:
        if not re.fullmatch(BENCH_EXPERIMENT_PATTERN, value):
            raise ValueError("expected tip-bench-NAME (letters, digits, '.', '_', '-')")
        return value

    def optimization(self) -> OptimizeConfig:
        """The optimization's own settings, without what a request adds (a job's kind, the
        DAG's store)."""
        return OptimizeConfig.model_validate(
            self.model_dump(include=set(OptimizeConfig.model_fields))
        )
