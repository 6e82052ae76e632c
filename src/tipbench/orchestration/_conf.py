"""The conf of a `bench_collect` run: the admin API's run request, the judge, a time limit.

`BenchConf` *is* the admin API's `RunRequest` (same keys, types, bounds and checks), plus the
automatic judge's model and each task's time limit; how many models collect at once is the
deployment's (Airflow's `max_active_tis_per_dagrun` and a pool), not a run's. The DAG's
typed Airflow `Param`s are derived from its JSON schema (`param_specs`), so the UI, the REST
API, the `plan` task and the admin API refuse the same values.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tipbench._errors import ConfigError, TipbenchError
from tipbench.backends import ModelSpec
from tipbench.pipeline import RunRequest

#: The DAGs' ids, and the asset whose events say "human scores were applied".
BENCH_COLLECT, BENCH_JUDGED = "bench_collect", "bench_judged"
JUDGED_ASSET_NAME, JUDGED_ASSET_URI = "tipbench_judged", "tipbench://judged"
#: A URI without user-info (`scheme://user:password@…`): the JSON schema of `mlflow_url`, so
#: that Airflow refuses credentials when a run is created, before its conf is stored.
NO_USER_INFO = r"^(?![A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@)"
#: The most models a `bench_collect` run collects at once (each holds one model resident).
MAX_PARALLEL_MODELS = 16
#: Where the deployment bounds concurrent models: per run (Airflow's
#: `max_active_tis_per_dagrun` of `collect`), and across runs (the pool of `collect`).
PARALLEL_MODELS_VARIABLE = "TIPBENCH_AIRFLOW_PARALLEL_MODELS"
POOL_VARIABLE = "TIPBENCH_AIRFLOW_POOL"


class BenchConf(RunRequest):
    """`dag_run.conf` of `bench_collect`. Every key is optional; unknown keys are refused."""

    judge_model: str | None = Field(
        default=None,
        description="The automatic judge's model spec [default: the bundled embedded model].",
    )
    timeout_minutes: float | None = Field(
        default=None,
        gt=0,
        le=7 * 24 * 60,
        description=(
            "Each task's time limit in minutes (its Airflow execution_timeout) [default: "
            "10 minutes plus 2 per cell the task works on]."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _no_parallel_models(cls, values: Any) -> Any:
        if isinstance(values, dict) and "parallel_models" in values:
            raise PydanticCustomError(
                "parallel_models",
                "parallel_models is no longer a conf key: the deployment bounds concurrent "
                f"models ({PARALLEL_MODELS_VARIABLE} and the pool {POOL_VARIABLE})",
            )
        return values

    @field_validator("judge_model")
    @classmethod
    def _judge_spec(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return ModelSpec.parse(value.strip()).with_declared_size()
        except TipbenchError as exc:
            raise PydanticCustomError("model_spec", str(exc)) from None


def read_conf(values: dict[str, Any]) -> BenchConf:
    """Validate a run's conf, with the CLI's one-line message on bad input.

    Raises:
        ConfigError: `field: problem`, naming the first bad key.
    """
    try:
        return BenchConf.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


def one_line(exc: ValidationError) -> str:
    """The first error of a validation, as `field: message` (as the CLI prints it)."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "config"
    return f"{field}: {error['msg'].removeprefix('Value error, ')}"


def param_specs(model: type[BaseModel] = BenchConf) -> dict[str, dict[str, Any]]:
    """Each conf key's Airflow `Param` arguments: its default and JSON schema (type, bounds),
    from the conf's model (`bench_collect`'s by default).

    Lists (models, prompts, policies) are comma-separated strings, as in SPEC §7's table and
    the CLI.
    """
    schema = model.model_json_schema()
    defaults = model().model_dump()
    specs: dict[str, dict[str, Any]] = {}
    for name, prop in schema["properties"].items():
        spec: dict[str, Any] = {
            key: value for key, value in prop.items() if key not in ("title", "default")
        }
        default = defaults[name]
        if prop.get("type") == "array":  # a list that may be empty (scenarios) may be ""
            spec = {"type": "string", "minLength": 1 if default else 0}
            spec["description"] = prop.get("description")
            default = ",".join(default)
        elif "anyOf" in prop:  # `X | None`: the JSON types of both
            spec.pop("anyOf")
            spec["type"] = [branch["type"] for branch in prop["anyOf"]]
        if name == "mlflow_url":
            spec["pattern"] = NO_USER_INFO
        specs[name] = {"default": default, **spec}
    return specs
