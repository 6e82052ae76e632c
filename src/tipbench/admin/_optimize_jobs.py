"""An optimization started from the Optimize page: a job that runs `tipbench optimize`.

The body is an optimization's settings (`tipbench.optimize.OptimizeConfig`) on tipbench's
working copy of the bundled suite (a folder path never comes from the web) and a
`tip-bench-*` experiment; the job runner runs it like a bench job, one at a time, with its
log, cancel and resume (the optimization resumes from its last finished iteration).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from tipbench.collect import BENCH_EXPERIMENT_PATTERN, DEFAULT_MODELS
from tipbench.optimize import DEFAULT_OPTIMIZE_EXPERIMENT, ROLES, OptimizeConfig

OPTIMIZATION_JOB: Literal["optimization"] = "optimization"
#: The largest budget a job from the web spends (a few hours on small models).
MAX_JOB_BUDGET = 2000


class OptimizationJobRequest(OptimizeConfig):
    """`POST /api/optimize/run`: what to optimize, with which models, for how long."""

    kind: Literal["optimization"] = OPTIMIZATION_JOB
    experiment: str = Field(default=DEFAULT_OPTIMIZE_EXPERIMENT, description="tip-bench-NAME")
    from_version: str = Field(default="v1", min_length=1, max_length=64)
    model: str = Field(default=DEFAULT_MODELS, min_length=1, max_length=200)
    budget: int = Field(default=40, ge=1, le=MAX_JOB_BUDGET)
    suite: None = None  # tipbench's working copy only

    @field_validator("experiment")
    @classmethod
    def _bench_experiment(cls, value: str) -> str:
        if not re.fullmatch(BENCH_EXPERIMENT_PATTERN, value):
            raise ValueError("expected tip-bench-NAME (letters, digits, '.', '_', '-')")
        return value

    def cell_count(self) -> int:
        """What the job's progress counts to before it reports: its budget."""
        return self.budget

    def cli_args(self) -> list[str]:
        """`tipbench` arguments of the job (the tracking URI is the runner's to add)."""
        args = [
            "optimize",
            "--from", self.from_version,
            "--model", self.model,
            "--judge-model", self.judge_model,
            "--reflection-model", self.reflection_model,
            "--budget", str(self.budget),
            "--seed", str(self.seed),
            "--shortlist", str(self.shortlist),
            "--minibatch", str(self.minibatch),
            "--n-tips", str(self.n_tips),
            "--temperature", repr(self.temperature),
            "--experiment", self.experiment,
            "--max-model-b", repr(self.max_model_b),
            "--ollama-url", self.ollama_url,
            "--structured", self.structured,
        ]  # fmt: skip
        if self.openai_base_url:
            args += ["--openai-base-url", self.openai_base_url]
        for role in ROLES:
            if (url := self.server(role)) is not None:
                args += [f"--{role}-url", url]
        if self.train_scenarios:
            args += ["--train-scenarios", self.train_scenarios]
        if self.heldout_experiment:
            args += ["--heldout-experiment", self.heldout_experiment]
        if not self.heldout:
            args.append("--no-heldout")
        return args
