"""The logged leaderboard follows applied scores: `judge apply` (and the judging page, in
tests/admin/test_api_judging.py) rewrites the latest `leaderboard` run when its figures
change, or marks it stale when it cannot, on a real MLflow store."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mlflow import MlflowClient
from mlflow.entities import Run

from support.cells import record_cells
from support.servers import MlflowServer
from tipbench.cli import cli
from tipbench.compare import (
    KIND_LEADERBOARD,
    STALE_TAG,
    latest_leaderboard_run,
    refresh_logged_leaderboard,
)
from tipbench.compare import _log as compare_log
from tipbench.human_tier import apply_judge_file, export_pending
from tipbench.tracking import KIND_TAG, TrackingStore


def run_cli(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def scored_file(uri: str, experiment: str, path: Path, prompt: str | None = None) -> Path:
    """Export the pending runs (revealed) and score those of `prompt` (all if None)."""
    export_pending(TrackingStore(uri), experiment, path, reveal=True)
    data: dict[str, Any] = json.loads(path.read_text())
    for item in data["items"]:
        if prompt is None or item["prompt_version"] == prompt:
            for candidate in item["candidates"]:
                candidate["scores"].update(relevance=4, actionability=3, tone=5)
    path.write_text(json.dumps(data))
    return path


def leaderboard_runs(uri: str, experiment: str) -> list[Run]:
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return client.search_runs([found.experiment_id], f"tags.`{KIND_TAG}` = '{KIND_LEADERBOARD}'")


def logged_json(uri: str, run: Run) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = MlflowClient(uri).download_artifacts(run.info.run_id, "leaderboard.json", tmp)
        document: dict[str, Any] = json.loads(Path(path).read_text())
    return document


def without_time(document: dict[str, Any]) -> dict[str, Any]:
    return {
        k: without_time(v) if isinstance(v, dict) else v
        for k, v in document.items()
        if k != "generated_at"
    }


@pytest.fixture
def half_judged(sqlite_uri: str, experiment: str, tmp_path: Path) -> Run:
    """Two prompts on three scenarios; v1 scored by a human, then the leaderboard logged."""
    record_cells(sqlite_uri, experiment, prompts=("v1", "v2-mentor"), n_scenarios=3)
    first = scored_file(sqlite_uri, experiment, tmp_path / "v1.json", prompt="v1")
    run_cli("judge", "apply", "--experiment", experiment, "--tracking-uri", sqlite_uri,
            str(first))  # fmt: skip
    run_cli("compare", "--experiment", experiment, "--tracking-uri", sqlite_uri, "--log",
            "--plot", str(tmp_path / "chart.png"))  # fmt: skip
    (run,) = leaderboard_runs(sqlite_uri, experiment)
    assert run.data.metrics["judged_runs"] == 3 and run.data.metrics["ranked_cells"] == 1
    return run


def test_judge_apply_refreshes_the_logged_leaderboard(
    half_judged: Run, sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    rest = scored_file(sqlite_uri, experiment, tmp_path / "rest.json")

    applied = run_cli("judge", "apply", "--experiment", experiment, "--tracking-uri",
                      sqlite_uri, str(rest))  # fmt: skip

    assert f"refreshed the logged leaderboard (run {half_judged.info.run_id})" in applied.output
    (run,) = leaderboard_runs(sqlite_uri, experiment)  # the same run, rewritten in place
    assert run.info.run_id == half_judged.info.run_id
    assert run.data.metrics["judged_runs"] == 6 and run.data.metrics["ranked_cells"] == 2
    assert run.data.tags["leaderboard_version"] == "2" and run.data.tags["refreshed_at"]
    history = MlflowClient(sqlite_uri).get_metric_history(run.info.run_id, "judged_runs")
    assert [(m.step, m.value) for m in history] == [(0, 3.0), (2, 6.0)]  # the old one kept
    human = ("--format", "json", "--tier", "human")  # no automatic scores: one tier logged
    printed = run_cli("compare", "--experiment", experiment, "--tracking-uri", sqlite_uri, *human)
    assert without_time(logged_json(sqlite_uri, run)) == without_time(json.loads(printed.stdout))
    names = {a.path for a in MlflowClient(sqlite_uri).list_artifacts(run.info.run_id)}
    assert "leaderboard.png" in names  # the chart is drawn again

    again = run_cli("judge", "apply", "--experiment", experiment, "--tracking-uri",
                    sqlite_uri, str(rest))  # fmt: skip
    assert "refreshed" not in again.output  # nothing changed: nothing rewritten
    (run,) = leaderboard_runs(sqlite_uri, experiment)
    assert run.data.tags["leaderboard_version"] == "2"


def test_a_leaderboard_that_cannot_be_refreshed_is_marked_stale(
    half_judged: Run,
    sqlite_uri: str,
    experiment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = TrackingStore(sqlite_uri)
    apply_judge_file(store, experiment, scored_file(sqlite_uri, experiment, tmp_path / "r.json"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(compare_log, "log_texts", refuse)
    refresh = refresh_logged_leaderboard(store, experiment)

    assert not refresh.refreshed and refresh.run_id == half_judged.info.run_id
    assert refresh.warning == (
        f"the logged leaderboard (run {half_judged.info.run_id}) could not be refreshed: "
        "disk full; it is marked stale"
    )
    run = MlflowClient(sqlite_uri).get_run(half_judged.info.run_id)
    assert run.data.tags[STALE_TAG] == "true"

    monkeypatch.undo()
    assert refresh_logged_leaderboard(store, experiment).refreshed  # stale: written again
    experiment_id = store.experiment_id(experiment)
    run = latest_leaderboard_run(store, experiment_id)
    assert run is not None and STALE_TAG not in run.data.tags
    assert run.data.metrics["judged_runs"] == 6


def test_an_experiment_without_a_logged_leaderboard_is_left_alone(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=3)
    scored = scored_file(sqlite_uri, experiment, tmp_path / "all.json")
    applied = run_cli("judge", "apply", "--experiment", experiment, "--tracking-uri",
                      sqlite_uri, str(scored))  # fmt: skip
    assert "refreshed" not in applied.output and "warning" not in applied.output
    assert leaderboard_runs(sqlite_uri, experiment) == []  # apply never logs a new one


@pytest.mark.slow
def test_refresh_rewrites_the_artifacts_on_a_real_mlflow_server(
    mlflow_server: MlflowServer, experiment: str, tmp_path: Path
) -> None:
    """Through `mlflow-artifacts:/`, the refreshed leaderboard.json replaces the old one."""
    uri = mlflow_server.url
    record_cells(uri, experiment, prompts=("v1", "v2-mentor"), n_scenarios=3)
    store = TrackingStore(uri)
    apply_judge_file(store, experiment, scored_file(uri, experiment, tmp_path / "a.json", "v1"))
    run_cli("compare", "--experiment", experiment, "--tracking-uri", uri, "--log")
    apply_judge_file(store, experiment, scored_file(uri, experiment, tmp_path / "b.json"))

    refresh = refresh_logged_leaderboard(store, experiment)

    assert refresh.refreshed and refresh.warning is None
    (run,) = leaderboard_runs(uri, experiment)
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/")
    assert logged_json(uri, run)["n_runs"] == 6 and run.data.metrics["judged_runs"] == 6
