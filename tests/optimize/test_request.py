"""The optimize config defined once (issue 48, item 4): the CLI's options default to
`OptimizeConfig`'s own values, the command line a config builds (`cli_args`) reads back as
the same config, and the Optimize page's job and the `prompt_optimize` DAG's conf are one
request (`OptimizeRequest`): the same defaults, the same checks with the same words."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tipbench.admin._optimize_jobs import MAX_JOB_BUDGET, OptimizationJobRequest
from tipbench.cli._optimize import optimize_command, settings
from tipbench.optimize import OptimizeConfig, OptimizeRequest
from tipbench.orchestration._optimize_phases import OptimizeConf

EVERY_KEY: dict[str, Any] = {
    "experiment": "tip-bench-x", "from_version": "v2-mentor", "model": "openai:tips@0.5B",
    "judge_model": "ollama:judge@1B", "reflection_model": "openai:reflect@3B", "budget": 12,
    "train_scenarios": "parent-morning,student-exam", "seed": 7, "shortlist": 2,
    "minibatch": 4, "n_tips": 3, "temperature": 0.25, "heldout_experiment": "tip-bench-y",
    "heldout": False, "model_url": "http://tasks:8000/v1", "judge_url": "http://judge:11434",
    "reflection_url": "http://big:8000/v1", "max_model_b": 3.5, "allow_unknown_size": True,
    "ollama_url": "http://ollama:11434", "openai_base_url": "http://shared:8000/v1",
    "structured": "schema", "suite": "/tmp/a-suite",
}  # fmt: skip
"""A value other than the default for every key of `tipbench optimize`."""


def from_command_line(args: list[str]) -> OptimizeConfig:
    """What `tipbench optimize ARGS` would run."""
    assert args[0] == "optimize"
    params = dict(optimize_command.make_context("optimize", args[1:]).params)
    params.pop("tracking_uri")
    return settings(**params)


def test_every_key_has_a_default_that_differs_here() -> None:
    defaults = OptimizeConfig(from_version="v1", model="ollama:m", budget=1)
    assert set(EVERY_KEY) == set(OptimizeConfig.model_fields)
    same = [k for k, v in EVERY_KEY.items() if getattr(defaults, k) == v]
    assert same == []


def test_a_configs_command_line_reads_back_as_the_same_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = OptimizeConfig.model_validate(EVERY_KEY)
    assert from_command_line(config.cli_args()) == config
    least = OptimizeConfig(from_version="v1", model="ollama:m", budget=3)
    assert from_command_line(least.cli_args()) == least


def test_the_command_lines_defaults_are_the_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what a shell must say is said: every other option takes the config's default."""
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    required = ["optimize", "--from", "v1", "--model", "ollama:m", "--budget", "3"]
    assert from_command_line(required) == OptimizeConfig(
        from_version="v1", model="ollama:m", budget=3
    )


def test_the_panels_job_and_the_dags_conf_are_one_request() -> None:
    job, conf = OptimizationJobRequest(), OptimizeConf()
    assert isinstance(job, OptimizeRequest) and isinstance(conf, OptimizeRequest)
    assert job.optimization() == conf.optimization() == OptimizeRequest().optimization()
    values = {k: v for k, v in EVERY_KEY.items() if k not in ("suite", "model_url", "judge_url")}
    job, conf = OptimizationJobRequest(**values), OptimizeConf(**values)
    assert job.optimization() == conf.optimization()
    assert job.cli_args() == job.optimization().cli_args()  # the runner's command line
    assert "--allow-unknown-size" in job.cli_args() and "--suite" not in job.cli_args()


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"experiment": "my-experiment"}, "experiment", "expected tip-bench-NAME"),
        ({"suite": "/etc"}, "suite", "Input should be None"),
        ({"from_version": ""}, "from_version", "at least 1 character"),
    ],
)
def test_a_request_refuses_the_same_values_in_the_same_words(
    values: dict[str, Any], field: str, words: str
) -> None:
    for request in (OptimizationJobRequest, OptimizeConf):
        with pytest.raises(ValidationError) as found:
            request.model_validate(values)
        error = found.value.errors()[0]
        assert error["loc"] == (field,) and words in error["msg"]


def test_each_request_keeps_its_own_additions() -> None:
    """The panel bounds a job's budget; the DAG names its store and keeps the held-out
    grid's servers to bench_collect's."""
    with pytest.raises(ValidationError, match="less than or equal to 2000"):
        OptimizationJobRequest(budget=MAX_JOB_BUDGET + 1)
    assert OptimizeConf(budget=MAX_JOB_BUDGET + 1).budget == MAX_JOB_BUDGET + 1
    assert OptimizeConf(mlflow_url="sqlite:///x.db").optimization() == OptimizeConf().optimization()
    with pytest.raises(ValidationError, match="not a key of this DAG"):
        OptimizeConf(model_url="http://tasks:8000/v1")
