"""An optimization's settings: the keys of `tipbench optimize`, validated the same way from
the CLI, the admin API and the DAG (`OptimizeConfig`), its defaults (the CLI's options show
them) and the command line that runs it (`cli_args`); a request from outside a shell
extends it (`optimize._request`).

Model specs keep their declared size (`openai:MODEL@3B`), so that the size guard sees it
wherever the spec goes next (collect, the judge, the reflection, the held-out grid). Each of
the three models may have a server of its own (`model_url`, `judge_url`, `reflection_url`):
the base URL of an OpenAI-compatible server or an Ollama host, as its spec's backend says;
without one, a model uses the shared `openai_base_url` or `ollama_url`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator

from tipbench._errors import ConfigError
from tipbench._phase import ExperimentName, PhaseConfig
from tipbench.auto_judge import DEFAULT_JUDGE_MODEL
from tipbench.backends import BackendOptions, ModelSpec
from tipbench.collect import CollectConfig

DEFAULT_OPTIMIZE_EXPERIMENT = "tip-bench-optimize"
#: The shortlist's length: how many proposals at most go on to the held-out grid.
DEFAULT_SHORTLIST = 3
#: Training scenarios per reflection (GEPA's minibatch; the paper's default).
DEFAULT_MINIBATCH = 3
#: The suffix of the held-out experiment's name (the gate runs there, on held-out cells only).
HELDOUT_SUFFIX = "-heldout"
_COUNT = re.compile(r"^\d+$")

#: The models an optimization calls: the task model, the judge and the reflection model.
ModelRole = Literal["model", "judge", "reflection"]
ROLES: tuple[ModelRole, ...] = ("model", "judge", "reflection")
_SPEC_FIELD: dict[str, str] = {
    "model": "model",
    "judge": "judge_model",
    "reflection": "reflection_model",
}


def _model_spec(value: str) -> str:
    try:
        return ModelSpec.parse(value.strip()).with_declared_size()
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
    heldout_experiment: ExperimentName | None = None
    heldout: bool = True  # run the held-out grid after the proposals
    #: The server of each model, if not the shared one (see the module's doc).
    model_url: str | None = Field(default=None, max_length=2048)
    judge_url: str | None = Field(default=None, max_length=2048)
    reflection_url: str | None = Field(default=None, max_length=2048)

    @field_validator("model", "judge_model", "reflection_model")
    @classmethod
    def _spec(cls, value: str) -> str:
        return _model_spec(value)

    @field_validator("heldout_experiment")
    @classmethod
    def _apart(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value == info.data.get("experiment"):
            raise ValueError(
                "the held-out grid needs an experiment of its own, not the training one: "
                "the gate would count the training cells"
            )
        return value

    @field_validator("model_url", "judge_url", "reflection_url")
    @classmethod
    def _server(cls, value: str | None, info: ValidationInfo) -> str | None:
        value = (value or "").strip() or None
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {value!r}")
        role = str(info.field_name).removesuffix("_url")
        spec = str(info.data.get(_SPEC_FIELD.get(role, "model"), ""))
        if spec and ModelSpec.parse(spec).backend == "llamacpp":
            raise ValueError(f"{spec} runs embedded, in this process: it has no server")
        return value

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

    def spec(self, role: ModelRole) -> ModelSpec:
        """The model spec of `role` (its declared size with it)."""
        return ModelSpec.parse(str(getattr(self, _SPEC_FIELD[role])))

    def server(self, role: ModelRole) -> str | None:
        """The server given for `role`'s model, if any (else the shared one is used)."""
        url: str | None = getattr(self, f"{role}_url")
        return url

    def phase_settings(self, role: ModelRole) -> dict[str, Any]:
        """What every phase shares (`PhaseConfig`'s keys), with the server of `role`'s model."""
        shared = self.model_dump(include=set(PhaseConfig.model_fields))
        url = self.server(role)
        if url is None:
            return shared
        key = "openai_base_url" if self.spec(role).backend == "openai" else "ollama_url"
        return shared | {key: url}

    def options(self, role: ModelRole, **overrides: Any) -> BackendOptions:
        """The backend options of `role`'s model: its server, with `overrides` (`n_ctx`)."""
        options = self.backend_options(**overrides)
        url = self.server(role)
        if url is None:
            return options
        if self.spec(role).backend == "openai":
            return replace(options, openai_base_url=url)
        return replace(options, ollama_url=url)

    def cli_args(self) -> list[str]:
        """The `tipbench` arguments that run this optimization (the tracking URI is the
        caller's to add): the one place its command line is built."""
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
        if self.allow_unknown_size:
            args.append("--allow-unknown-size")
        if self.suite is not None:
            args += ["--suite", self.suite]
        return args

    def grid(self, prompts: list[str], scenarios: list[str], experiment: str) -> CollectConfig:
        """The grid of one model on these prompt versions and scenarios (collect's config)."""
        shared = self.phase_settings("model")
        return CollectConfig(
            **(shared | {"experiment": experiment}),
            models=[self.model],
            prompts=prompts,
            scenarios=scenarios,
            n_tips=self.n_tips,
            temperature=self.temperature,
            seed=self.seed,
        )
