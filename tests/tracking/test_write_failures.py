"""MLflow refusing writes during collect, judging and promotion: exit 1 (or a one-line
error), the failure named, nothing half written, and nothing lost on the next run.

The model is the Ollama protocol server of tests/support (Ollama itself cannot run here);
the store is a real SQLite MLflow store whose artifact writes fail for the test's duration.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

from support.judged_runs import JudgedCell, uniform, write_cells
from support.ollama_server import FakeOllama, ModelEntry
from tipbench import TrackingError
from tipbench.cli import cli
from tipbench.promote import promote
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

WRITER, JUDGE = "qwen2.5:0.5b", "gemma3:1b"
MODELS = {
    WRITER: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M"),
    JUDGE: ModelEntry(parameter_count=999_885_952, parameter_size="999.89M"),
}


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(MODELS) as fake:
        yield fake


def refuse_artifacts(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuse)


def tipbench(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def chats(server: FakeOllama, model: str) -> int:
    return sum(1 for event in server.events if event == ("chat", model))


def test_collect_and_judge_survive_a_store_that_refuses_writes(
    server: FakeOllama, sqlite_uri: str, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    common = ["--experiment", experiment, "--tracking-uri", sqlite_uri, "--ollama-url", server.url]
    grid = ["collect", *common, "--models", f"ollama:{WRITER}", "--prompts", "v1",
            "--n-scenarios", "2", "--n-tips", "2"]  # fmt: skip
    judge = ["judge", "auto", *common, "--judge-model", f"ollama:{JUDGE}"]
    store = TrackingStore(sqlite_uri)

    with monkeypatch.context() as failing:
        refuse_artifacts(failing)
        code, out, err = tipbench(*grid)
    assert code == 1, err
    assert "2 cells: 0 already recorded, 2 collected, 0 failed" in out
    unwritten = [line for line in err.splitlines() if "not written to MLflow" in line]
    assert len(unwritten) == 2 and all("disk full" in line for line in unwritten)
    assert store.cell_runs(store.experiment_id(experiment)) == []  # nothing half written
    generated = chats(server, WRITER)

    code, out, err = tipbench(*grid)  # the answers were cached: nothing is generated again
    assert code == 0, err
    assert "2 cells: 0 already recorded, 2 collected, 0 failed" in out
    assert chats(server, WRITER) == generated
    assert len(store.cell_runs(store.experiment_id(experiment), judgeable=True)) == 2

    with monkeypatch.context() as failing:
        refuse_artifacts(failing)
        code, out, err = tipbench(*judge)
    assert code == 1, err
    assert "2 runs: 0 already auto-judged, 2 judged (4 candidates), 0 failed" in out
    unwritten = [line for line in err.splitlines() if "not written to MLflow" in line]
    assert len(unwritten) == 2 and all("disk full" in line for line in unwritten)
    runs = store.cell_runs(store.experiment_id(experiment))
    assert not any(run.judged_by("auto") for run in runs)  # no scores without their files

    code, out, err = tipbench(*judge)
    assert code == 0, err
    assert "2 runs: 0 already auto-judged, 2 judged (4 candidates), 0 failed" in out
    runs = store.cell_runs(store.experiment_id(experiment))
    assert all(run.scores_version("auto") == 1 for run in runs)


def test_a_decision_that_cannot_be_recorded_is_one_error_and_no_run(
    sqlite_uri: str, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    human, auto = {"v1": 9, "v2-mentor": 13}, {"v1": 14, "v2-mentor": 10}  # the tiers disagree
    cells = [
        JudgedCell(
            "ollama:qwen2.5:1.5b", prompt, s.id, uniform(human[prompt]), uniform(auto[prompt])
        )
        for prompt in human
        for s in load_suite().scenarios
    ]
    write_cells(store.client, experiment_id, cells)
    refuse_artifacts(monkeypatch)

    with pytest.raises(TrackingError) as raised:
        promote(store, experiment, apply=True)  # a refusal is recorded too

    assert str(raised.value) == f"cannot record the decision at {sqlite_uri}: disk full"
    records = store.client.search_runs([experiment_id], "tags.`tipbench.kind` = 'promotion'")
    assert records == []  # nothing half written
