"""Issue 45, items 1 and 8: each model on its own server, a declared size kept everywhere.

Two scripted OpenAI-compatible servers (`support.openai_server`; the backend reaches them
with the official `openai` client): the task model's, which reports its model's size as
llama.cpp's server does, and another that serves the reflection model and the judge
without a size, as vLLM and LM Studio do. The models answer as in the scripted world
(`support.scripted_world`): the reflection model from its request, the judge by rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import assert_one_line_error, tipbench
from support.openai_server import ScriptedOpenAI
from support.scripted_world import TRAINING, judge_model, rule_reflection, task_model
from tipbench.admin._optimize_jobs import OptimizationJobRequest
from tipbench.auto_judge import AutoJudgeConfig
from tipbench.optimize import OptimizeConfig
from tipbench.orchestration._optimize_phases import OptimizeConf, heldout_conf

TASK, JUDGE, REFLECTION = "tips-0.5b", "judge-1b", "reflect-3b"


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedOpenAI, ScriptedOpenAI]]:
    with (
        ScriptedOpenAI({TASK: 494_032_768}) as sized,
        ScriptedOpenAI({JUDGE: None, REFLECTION: None}) as unsized,
    ):
        sized.respond(TASK, task_model)
        unsized.respond(JUDGE, judge_model)
        unsized.respond(REFLECTION, rule_reflection)
        yield sized, unsized


def args(sized: ScriptedOpenAI, unsized: ScriptedOpenAI, uri: str, *extra: str) -> list[str]:
    return [
        "optimize", "--from", "v1", "--model", f"openai:{TASK}",
        "--judge-model", f"openai:{JUDGE}@1B", "--reflection-model", f"openai:{REFLECTION}@3B",
        "--openai-base-url", sized.url, "--judge-url", unsized.url,
        "--reflection-url", unsized.url, "--budget", "8",
        "--train-scenarios", ",".join(TRAINING), "--minibatch", "2", "--n-tips", "2",
        "--tracking-uri", uri, *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_each_model_on_its_own_server_with_declared_sizes(
    servers: tuple[ScriptedOpenAI, ScriptedOpenAI], sqlite_uri: str
) -> None:
    """The judge and the reflection model run on a server that reports no size, declared
    `@1B` and `@3B`; the task model on another. Every request goes to its model's server,
    the held-out grid's judging included."""
    sized, unsized = servers
    done = tipbench(*args(sized, unsized, sqlite_uri))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 proposal" in done.stdout and "== held-out grid" in done.stdout
    assert "then the held-out grid: at most 24 cells, each collected and judged" in done.stderr
    assert "held-out gate: 6 scenarios: the gate can detect a gap of about 2.8 composite" in (
        " ".join(done.stderr.split())
    )
    assert {r["model"] for r in sized.requests} == {TASK}
    asked = [r["model"] for r in unsized.requests]
    assert asked.count(REFLECTION) == 1 and set(asked) == {JUDGE, REFLECTION}
    # the held-out grid (v1 and the proposal on 6 scenarios, 2 tips each) was judged there
    assert asked.count(JUDGE) >= (2 + 2) * 2 + 2 * 6 * 2


@pytest.mark.parametrize(
    ("reflection", "extra", "expected"),
    [
        (
            f"openai:{REFLECTION}",
            [],
            f"--reflection-model: openai:{REFLECTION}: the backend does not report the "
            "model's size; declare it",
        ),
        (
            f"openai:{REFLECTION}@7B",
            ["--allow-unknown-size"],
            f"--reflection-model: openai:{REFLECTION} has 7.00B parameters, over the limit",
        ),
    ],
)
def test_the_size_guard_sees_what_was_declared(
    servers: tuple[ScriptedOpenAI, ScriptedOpenAI],
    sqlite_uri: str,
    tipbench_home: Path,
    reflection: str,
    extra: list[str],
    expected: str,
) -> None:
    """A model of no reported size needs its size declared, and a declared size is checked
    like a reported one, `--allow-unknown-size` or not; nothing is written or generated."""
    sized, unsized = servers
    done = tipbench(*args(sized, unsized, sqlite_uri, "--reflection-model", reflection, *extra))
    assert_one_line_error(done, expected)
    assert sized.requests == [] and unsized.requests == []
    assert not (tipbench_home / "suites").exists()
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()


def test_declared_sizes_and_servers_travel_with_the_settings() -> None:
    """From the settings to the judge's, the panel's job and the DAG's held-out grid."""
    values = {
        "from_version": "v1", "model": "openai:tips@0.5B", "judge_model": "openai:judge@1B",
        "reflection_model": "openai:reflect@3B", "budget": 8, "experiment": "tip-bench-x",
        "openai_base_url": "http://tasks:8000/v1", "reflection_url": "http://big:8000/v1",
    }  # fmt: skip
    config = OptimizeConfig.model_validate(values)
    assert (config.model, config.judge_model, config.reflection_model) == (
        "openai:tips@0.5B", "openai:judge@1B", "openai:reflect@3B"
    )  # fmt: skip
    assert config.options("reflection").openai_base_url == "http://big:8000/v1"
    assert config.options("model").openai_base_url == "http://tasks:8000/v1"
    judge = AutoJudgeConfig(judge_model=config.judge_model, **config.phase_settings("judge"))
    assert judge.judge_model == "openai:judge@1B"
    job = OptimizationJobRequest.model_validate(values).cli_args()
    for option, value in (
        ("--model", "openai:tips@0.5B"), ("--judge-model", "openai:judge@1B"),
        ("--reflection-model", "openai:reflect@3B"), ("--reflection-url", "http://big:8000/v1"),
        ("--openai-base-url", "http://tasks:8000/v1"),
    ):  # fmt: skip
        assert job[job.index(option) + 1] == value
    dag = OptimizeConf.model_validate(values)
    assert dag.options("reflection").openai_base_url == "http://big:8000/v1"
    order = {"conf": dag.model_dump(mode="json"), "tracking_uri": "sqlite:///x.db"}
    last = {"start": "v1", "shortlist": ["v1-gepa-0123abcd"], "heldout": ["parent-morning"]}
    grid = heldout_conf(order, last)
    assert grid is not None
    assert (grid["models"], grid["judge_model"]) == ("openai:tips@0.5B", "openai:judge@1B")


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"reflection_url": "ftp://big"}, "reflection_url", "not an http(s) URL"),
        ({"judge_url": "http://big:1"}, "judge_url", "runs embedded, in this process"),
        ({"heldout_experiment": "tip-bench-x"}, "heldout_experiment", "an experiment of its own"),
    ],
)
def test_a_server_or_experiment_that_cannot_be_is_refused_by_name(
    extra: dict[str, str], field: str, message: str
) -> None:
    values = {"from_version": "v1", "model": "openai:tips@0.5B", "budget": 8,
              "experiment": "tip-bench-x"} | extra  # fmt: skip
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        OptimizeConfig.model_validate(values)
    assert raised.value.errors()[0]["loc"] == (field,)  # type: ignore[attr-defined]
