"""`tipbench collect` from the command line: bad input ends in one clear line and exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.cli import assert_one_line_error, tipbench
from support.ollama_server import FakeOllama, ModelEntry
from support.servers import free_port
from tipbench.suite import bundled_suite_path


def test_unknown_prompt_version_writes_nothing(sqlite_uri: str) -> None:
    result = tipbench("collect", "--prompts", "v1,v9", "--tracking-uri", sqlite_uri)
    assert_one_line_error(result, "unknown prompt version 'v9'", "known: v1, v2-mentor")
    assert MlflowClient(sqlite_uri).get_experiment_by_name("tip-bench-auto") is None


def test_unknown_embedded_model() -> None:
    assert_one_line_error(
        tipbench("collect", "--models", "llamacpp:nope"), "llamacpp:nope", "not a bundled model"
    )


def test_unknown_ollama_model() -> None:
    with FakeOllama({"qwen2.5:0.5b": ModelEntry(494_000_000, "494M")}) as server:
        result = tipbench("collect", "--models", "llama9:7b", "--ollama-url", server.url)
    assert_one_line_error(result, "ollama:llama9:7b", "has no such model")


def test_model_over_the_size_limit_is_refused_before_generation() -> None:
    with FakeOllama({"llama3.1:8b": ModelEntry(8_030_000_000, "8.0B")}) as server:
        result = tipbench("collect", "--models", "llama3.1:8b", "--ollama-url", server.url)
        assert not [e for e in server.events if e[0] in ("load", "chat")]
    assert_one_line_error(result, "8.03B parameters", "limit of 4B")


def test_unreachable_server() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = tipbench("collect", "--models", "ollama:qwen2.5:0.5b", "--ollama-url", url)
    assert_one_line_error(result, f"cannot reach Ollama at {url}")


def test_unreachable_tracking_server() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = tipbench("collect", "--n-scenarios", "1", "--tracking-uri", url)
    assert_one_line_error(result, f"cannot use the MLflow store at {url}", "connection refused")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: (d / "scenarios.yaml").unlink(), ["scenarios.yaml", "missing file"]),
        (
            lambda d: (d / "prompts" / "v1.yaml").write_text("version: v1\nsystem: [unclosed\n"),
            ["v1.yaml", "bad YAML"],
        ),
        (
            lambda d: (d / "prompts" / "v1.yaml").write_text(
                "version: v1\ndescription: d\nsystem: s\nuser: Hi $nickname\n"
            ),
            ["v1.yaml", "unknown placeholder $nickname"],
        ),
    ],
)
def test_broken_suite(tmp_path: Path, edit: object, expected: list[str]) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(bundled_suite_path(), suite)
    edit(suite)  # type: ignore[operator]
    assert_one_line_error(tipbench("collect", "--suite", str(suite)), *expected)


def test_bad_option_values() -> None:
    assert_one_line_error(
        tipbench("collect", "--n-tips", "0"),
        "Invalid value for '--n-tips': ",  # named as typed, not as the config's field
        "greater than or equal",
    )
    assert_one_line_error(
        tipbench("collect", "--n-scenarios", "-1", "--concurrency", "0"),
        "'--n-scenarios'", "; --concurrency: ",  # every bad value, on one line
    )  # fmt: skip
    assert_one_line_error(tipbench("collect", "--plot", "x"), "No such option '--plot'")


@pytest.mark.parametrize("spec", ["lamacpp:smollm2-135m", "foo:bar"])
def test_unknown_backend_prefix_names_the_known_backends(spec: str) -> None:
    result = tipbench("collect", "--models", spec)
    assert_one_line_error(result, f"unknown backend {spec.split(':')[0]!r}",
                          "the backends are llamacpp, ollama, openai")  # fmt: skip
    assert "cannot reach" not in result.stderr


def test_help_names_the_environment_variables_of_defaults() -> None:
    text = " ".join(tipbench("collect", "--help").stdout.split())  # unwrapped
    for option, variable in (("--ollama-url", "OLLAMA_HOST"),
                             ("--openai-base-url", "OPENAI_BASE_URL"),
                             ("--tracking-uri", "MLFLOW_TRACKING_URI")):  # fmt: skip
        described = text[text.index(option) :]
        assert f"env var: {variable}" in described[: described.index("--", 3)]
    assert_one_line_error(tipbench("collect", "--experiment", "../x"), "experiment")
    assert_one_line_error(tipbench("collect", "--models", "a b"), "bad model spec")


@pytest.mark.slow
def test_collect_reports_where_results_are(sqlite_uri: str) -> None:
    result = tipbench(
        "collect", "--prompts", "v1", "--n-scenarios", "99", "--n-tips", "1",
        "--max-tokens", "48", "--tracking-uri", sqlite_uri,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "8 cells: 0 already recorded, 8 collected, 0 failed" in result.stdout
    assert "warning: asked for 99 scenarios, but suite 'tips' has 8: ran all 8" in result.stderr
    assert "model loads: llamacpp:smollm2-135m ×1" in result.stdout
    assert f"experiment 'tip-bench-auto' at {sqlite_uri}" in result.stdout
    assert f"mlflow ui --backend-store-uri {sqlite_uri}" in result.stdout
    assert "INFO mlflow" not in result.stderr


def test_run_checks_its_output_paths_before_any_work(sqlite_uri: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for option in ("--plot", "--out"):
        result = tipbench("run", option, str(blocker / "x" / "out.png"), "--tracking-uri",
                          sqlite_uri)  # fmt: skip
        assert_one_line_error(result, f"Invalid value for '{option}': cannot create the folder")
        assert result.stdout == ""
    assert MlflowClient(sqlite_uri).get_experiment_by_name("tip-bench-auto") is None


def test_judge_apply_help_names_its_environment_variable() -> None:
    text = " ".join(tipbench("judge", "apply", "--help").stdout.split())
    assert "else $TIPBENCH_JUDGE, else your user name" in text
