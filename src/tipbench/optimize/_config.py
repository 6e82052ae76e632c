"""An optimization's settings: the keys of `tipbench optimize`, validated the same way from
the CLI, the admin API and the DAG (`OptimizeConfig`)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from tipbench._errors import ConfigError
from tipbench._phase import PhaseConfig
from tipbench.backends import ModelSpec
from tipbench.collect import CollectConfig
from tipbench.judge import DEFAULT_JUDGE_MODEL

DEFAULT_OPTIMIZE_EXPERIMENT = "tip-bench-optimize"
#: The shortlist's length: how many proposals at most go on to the held-out grid.
DEFAULT_SHORTLIST = 3
#: Training scenarios per reflection (GEPA's minibatch; the paper's default).
DEFAULT_MINIBATCH = 3
#: The suffix of the held-out experiment's name (the gate runs there, on held-out cells only).
HELDOUT_SUFFIX = "-heldout"
_COUNT = re.compile(r"^\d+$")


def _model_spec(value: str) -> str:
    try:
        return str(ModelSpec.parse(value.strip()))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


class OptimizeConfig(PhaseConfig):
    """What to optimize, with which models, on which scenarios, for how many evaluations.

    An evaluation is one training scenario of one prompt version: a cell collected and
    judged automatically (GEPA's "metric call"). `train_scenarios` is a count (that many
    scenarios drawn with `seed`) or comma-separated scenario ids; empty: every scenario the
    gate does not need held out (see `optimize._split`).
    """

    experiment: str = DEFAULT_OPTIMIZE_EXPERIMENT
    from_version: str = Field(min_length=1)
    model: str = Field(min_length=1)
    judge_model: str = DEFAULT_JUDGE_MODEL
    reflection_model: str = DEFAULT_JUDGE_MODEL
    budget: int = Field(ge=1, le=100_000)
    train_scenarios: str = ""
    seed: int = Field(default=42, ge=0, le=2**31 - 1)
    shortlist: int = Field(default=DEFAULT_SHORTLIST, ge=1, le=20)
    minibatch: int = Field(default=DEFAULT_MINIBATCH, ge=1, le=100)
    n_tips: int = Field(default=5, ge=1, le=20)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    heldout_experiment: str | None = None
    heldout: bool = True  # run the held-out grid after the proposals

    @field_validator("model", "judge_model", "reflection_model")
    @classmethod
    def _spec(cls, value: str) -> str:
        return _model_spec(value)

    @field_validator("train_scenarios")
    @classmethod
    def _train(cls, value: str) -> str:
        value = value.strip()
        if _COUNT.match(value) and int(value) < 1:
            raise ValueError("a count of training scenarios must be at least 1")
        return ",".join(part.strip() for part in value.split(",") if part.strip())

    @property
    def train_count(self) -> int | None:
        """The number of training scenarios to draw, if a count was given."""
        return int(self.train_scenarios) if _COUNT.match(self.train_scenarios) else None

    @property
    def train_ids(self) -> tuple[str, ...]:
        """The training scenarios named, if ids were given."""
        if not self.train_scenarios or self.train_count is not None:
            return ()
        return tuple(self.train_scenarios.split(","))

    @property
    def heldout_name(self) -> str:
        """The experiment of the held-out grid: `--heldout-experiment`, else EXPERIMENT-heldout."""
        return self.heldout_experiment or f"{self.experiment}{HELDOUT_SUFFIX}"

    def grid(self, prompts: list[str], scenarios: list[str], experiment: str) -> CollectConfig:
        """The grid of one model on these prompt versions and scenarios (collect's config)."""
        shared = self.model_dump(include=set(PhaseConfig.model_fields))
        return CollectConfig(
            **(shared | {"experiment": experiment}),
            models=[self.model],
            prompts=prompts,
            scenarios=scenarios,
            n_tips=self.n_tips,
            temperature=self.temperature,
            seed=self.seed,
        )
