"""A pipeline run's conf (the keys of SPEC §7), validated as `CollectConfig` does.

The body of the admin API's `POST /api/bench/run`, and the base of the Airflow DAG's conf.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Self
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from tipbench._errors import TipbenchError
from tipbench._redact import has_credentials
from tipbench.backends import DEFAULT_STRUCTURED, StructuredMode
from tipbench.collect import BENCH_EXPERIMENT_PATTERN as EXPERIMENT_PATTERN
from tipbench.collect import DEFAULT_EXPERIMENT, CollectConfig
from tipbench.suite import Suite, load_suite, working_copy_path
from tipbench.tracking import data_dir

_GRID = CollectConfig.model_json_schema()["properties"]
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "minItems")
_TRACKING_SCHEMES = frozenset({"http", "https", "sqlite", "file", "postgresql", "mysql", "mssql"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Limits of a run body, so that no body bloats the jobs database or the panel's polling.
MAX_MODELS = 16
MAX_PROMPTS = 16
MAX_NAME_CHARS = 200  # one model spec or prompt version
MAX_URL_CHARS = 2048
MAX_SCENARIOS = 1000
Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]


def _grid_field(name: str, description: str, **kwargs: Any) -> Any:
    """A field documented with the bounds `CollectConfig` enforces for the same key."""
    bounds = {key: value for key, value in _GRID[name].items() if key in _BOUNDS}
    return Field(description=description, json_schema_extra=bounds, **kwargs)


@cache
def _bundled_suite() -> Suite:
    return load_suite()


def _working_copy() -> Path:
    return working_copy_path(data_dir())


def _working_suite() -> Suite:
    """The working copy as it is now (proposals are added to it: never cached)."""
    return load_suite(_working_copy())


class RunRequest(BaseModel):
    """A pipeline run to start: the grid on the bundled suite, and where to track it.

    Every key is optional; unknown keys are refused. Model specs, bounds and types are
    checked exactly as `tipbench run` checks its options, prompt versions against the
    bundled suite, so a bad body is refused before a job exists.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    models: list[Name] = _grid_field(
        "models",
        "Model specs, as a list or one comma-separated string.",
        default_factory=lambda: CollectConfig().models,
        max_length=MAX_MODELS,
    )
    prompts: list[Name] = _grid_field(
        "prompts",
        "Prompt versions of the bundled suite, as a list or one comma-separated string.",
        default_factory=lambda: CollectConfig().prompts,
        max_length=MAX_PROMPTS,
    )
    n_tips: int = _grid_field("n_tips", "Candidates per cell.", default=5)
    n_scenarios: int = _grid_field("n_scenarios", "The first N scenarios (0 = all).", default=0)
    scenarios: list[Name] = _grid_field(
        "scenarios",
        "Scenario ids, as a list or one comma-separated string, instead of the first N (e.g. "
        "an optimization's held-out scenarios) [default: none].",
        default_factory=list,
        max_length=MAX_SCENARIOS,
    )
    working_suite: bool = Field(
        default=False,
        description="Run on tipbench's working copy of the bundled suite ($TIPBENCH_HOME/"
        "suites/tips, where `tipbench optimize` writes its proposals) instead of the bundled "
        "suite itself.",
    )
    temperature: float = _grid_field("temperature", "Sampling temperature.", default=0.7)
    experiment: str = Field(
        default=DEFAULT_EXPERIMENT,
        description="The MLflow experiment, a `tip-bench-*` name.",
        json_schema_extra={"pattern": EXPERIMENT_PATTERN},
    )
    max_model_b: float = _grid_field(
        "max_model_b", "Refuse models above this many billion parameters.", default=4.0
    )
    ollama_url: str = Field(
        default_factory=lambda: CollectConfig().ollama_url,
        description="The Ollama server.",
        max_length=MAX_URL_CHARS,
    )
    mlflow_url: str | None = Field(
        default=None,
        description="MLflow tracking URI, one the server allows [default: the server's store].",
        max_length=MAX_URL_CHARS,
    )
    structured: StructuredMode = Field(
        default=DEFAULT_STRUCTURED,
        description="Constrained output: auto (free first, the JSON schema only for answers "
        "that do not parse), schema, json or off.",
    )

    @field_validator("models", "prompts", "scenarios", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if len(value) > MAX_MODELS * (MAX_NAME_CHARS + 1):  # refused before it is split
            raise PydanticCustomError("too_long", "too long a list")
        return [part.strip() for part in value.split(",") if part.strip()]

    @field_validator("models", "prompts", "scenarios")
    @classmethod
    def _printable(cls, value: list[str]) -> list[str]:
        if any(_CONTROL.search(part) for part in value):
            raise PydanticCustomError("control_character", "control characters (NUL…) are refused")
        return value

    @field_validator("models", "prompts", "n_tips", "n_scenarios", "temperature", "max_model_b")
    @classmethod
    def _as_collect_checks(cls, value: Any, info: Any) -> Any:
        """Checked by `CollectConfig` itself, so the API and the CLI refuse the same values."""
        try:
            config = CollectConfig.model_validate({info.field_name: value})
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise PydanticCustomError("grid_config", message) from None
        return getattr(config, info.field_name)

    @field_validator("prompts")
    @classmethod
    def _known_prompts(cls, value: list[str]) -> list[str]:
        """Versions of the bundled suite (or of the working copy: checked whole below)."""
        proposed = _working_suite().prompts if _working_copy().is_dir() else {}
        try:
            for version in value:
                if version not in proposed:
                    _bundled_suite().prompt(version)
        except TipbenchError as exc:
            raise PydanticCustomError("prompt_version", str(exc)) from None
        return value

    @model_validator(mode="after")
    def _in_the_suite(self) -> Self:
        """Every prompt version and scenario is in the suite the grid runs on."""
        try:
            suite = self.suite()
            for version in self.prompts:
                suite.prompt(version)
            suite.select_scenarios(self.n_scenarios, self.scenarios)
        except TipbenchError as exc:
            raise PydanticCustomError("suite", str(exc)) from None
        return self

    def suite(self) -> Suite:
        """The suite the grid runs on: the bundled one, or tipbench's working copy."""
        return _working_suite() if self.working_suite else _bundled_suite()

    @field_validator("experiment")
    @classmethod
    def _bench_experiment(cls, value: str) -> str:
        if not re.fullmatch(EXPERIMENT_PATTERN, value):
            raise PydanticCustomError(
                "experiment_name",
                "expected tip-bench-NAME (letters, digits, '.', '_', '-'; at most 100 characters)",
            )
        return value

    @field_validator("ollama_url")
    @classmethod
    def _server_url(cls, value: str) -> str:
        return _checked_url(value, frozenset({"http", "https"}))

    @field_validator("mlflow_url")
    @classmethod
    def _tracking_url(cls, value: str | None) -> str | None:
        return None if value is None else _checked_url(value, _TRACKING_SCHEMES)

    def collect_config(self) -> CollectConfig:
        """The grid as `tipbench run` will see it."""
        return CollectConfig(
            models=self.models,
            prompts=self.prompts,
            n_tips=self.n_tips,
            n_scenarios=self.n_scenarios,
            scenarios=self.scenarios,
            suite=str(_working_copy()) if self.working_suite else None,
            temperature=self.temperature,
            experiment=self.experiment,
            max_model_b=self.max_model_b,
            ollama_url=self.ollama_url,
            structured=self.structured,
        )

    def cell_count(self) -> int:
        """How many cells the grid has: models × prompts × scenarios."""
        scenarios = self.suite().select_scenarios(self.n_scenarios, self.scenarios)
        return len(self.models) * len(self.prompts) * len(scenarios)

    def cli_args(self) -> list[str]:
        """`tipbench run` options for this grid (the tracking URI is the runner's to add)."""
        return [
            "--models", ",".join(self.models),
            "--prompts", ",".join(self.prompts),
            "--n-tips", str(self.n_tips),
            "--n-scenarios", str(self.n_scenarios),
            "--temperature", repr(self.temperature),
            "--experiment", self.experiment,
            "--max-model-b", repr(self.max_model_b),
            "--ollama-url", self.ollama_url,
            "--structured", self.structured,
            *(["--scenarios", ",".join(self.scenarios)] if self.scenarios else []),
            *(["--suite", str(_working_copy())] if self.working_suite else []),
        ]  # fmt: skip


def _checked_url(value: str, schemes: frozenset[str]) -> str:
    value = value.strip()
    if _CONTROL.search(value):
        raise PydanticCustomError("url", "control characters (NUL…) are refused")
    try:
        parts = urlsplit(value)
    except ValueError:
        raise PydanticCustomError("url", "not a URL") from None
    scheme = parts.scheme.split("+")[0]  # e.g. postgresql+psycopg
    if scheme not in schemes or (scheme in ("http", "https") and not parts.hostname):
        allowed = ", ".join(sorted(schemes))
        raise PydanticCustomError(
            "url", "expected a URL with scheme {allowed}", {"allowed": allowed}
        )
    if has_credentials(value):
        raise PydanticCustomError(
            "url",
            "credentials in URLs are not accepted (they would be stored with the job); "
            "give them to the server's environment instead",
        )
    return value
