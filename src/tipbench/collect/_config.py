"""The collect configuration: the keys of SPEC §7 with their types, bounds and defaults."""

from __future__ import annotations

from pydantic import Field, field_validator

from tipbench._errors import ConfigError
from tipbench._phase import PhaseConfig
from tipbench.backends import ModelSpec, parse_model_list

DEFAULT_MODELS = "llamacpp:smollm2-135m"
DEFAULT_PROMPTS = "v1,v2-mentor,v3-few-shot"

#: The experiments the admin API and the DAGs work on: `tip-bench-NAME`.
BENCH_EXPERIMENT_PATTERN = r"^tip-bench-[A-Za-z0-9][A-Za-z0-9._-]{0,89}$"


def _split(value: str | list[str]) -> list[str]:
    parts = value.split(",") if isinstance(value, str) else value
    return [p.strip() for p in parts if p.strip()]


class CollectConfig(PhaseConfig):
    """A grid to collect. Validated the same way from the CLI, the API and the DAG."""

    models: list[str] = Field(default_factory=lambda: _split(DEFAULT_MODELS), min_length=1)
    prompts: list[str] = Field(default_factory=lambda: _split(DEFAULT_PROMPTS), min_length=1)
    n_tips: int = Field(default=5, ge=1, le=20)
    n_scenarios: int = Field(default=0, ge=0, le=1000)
    #: The scenarios by id (in suite order), instead of the first `n_scenarios`: a split's
    #: training or held-out scenarios (`tipbench optimize`).
    scenarios: list[str] = Field(default_factory=list, max_length=1000)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    seed: int = Field(default=42, ge=0, le=2**31 - 1)
    max_tokens: int | None = Field(default=None, ge=16, le=8192)
    diversity: bool = False
    concurrency: int = Field(default=1, ge=1, le=32)
    use_cache: bool = True
    #: Also record MLflow's GenAI records: a trace per cell, the rules' flags as assessments,
    #: the suite's prompts in the Prompt Registry (`--no-genai-records` turns them off).
    genai_records: bool = True

    @field_validator("models", "prompts", "scenarios", mode="before")
    @classmethod
    def _comma_separated(cls, value: str | list[str]) -> list[str]:
        return _split(value)

    @field_validator("models")
    @classmethod
    def _model_specs(cls, value: list[str]) -> list[str]:
        try:
            return [str(spec) + _size_suffix(spec) for spec in parse_model_list(",".join(value))]
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("prompts")
    @classmethod
    def _unique_prompts(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a prompt version is listed twice")
        return value

    def model_specs(self) -> tuple[ModelSpec, ...]:
        return parse_model_list(",".join(self.models))

    @property
    def generation_tokens(self) -> int:
        """The token budget per cell: enough for `n_tips` short tips in a JSON list."""
        return self.max_tokens or 64 * self.n_tips + 48


def _size_suffix(spec: ModelSpec) -> str:
    return f"@{spec.declared_parameters / 1e9:g}B" if spec.declared_parameters else ""
