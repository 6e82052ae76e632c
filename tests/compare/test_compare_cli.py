"""`tipbench compare`: every format, the chart, and the leaderboard run it logs to MLflow."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from matplotlib.image import imread
from mlflow import MlflowClient
from mlflow.entities import Run

from support.calibrations import log_fake_calibration
from support.cli import tipbench
from support.judged_experiment import ALPHA, BETA, GAMMA, JudgedExperiment, make_judged_experiment
from support.judged_runs import AUTO_JUDGE, JudgedCell, write_cells
from support.servers import MlflowServer
from tipbench.cli import cli
from tipbench.compare import KIND_LEADERBOARD, leaderboards_for
from tipbench.compare._plot import _LEADER, _UNRANKED
from tipbench.tracking import KIND_TAG, TrackingStore


def compare(judged: JudgedExperiment, *args: str) -> Result:
    result = CliRunner().invoke(
        cli, ["compare", "--experiment", judged.name, "--tracking-uri", judged.uri, *args]
    )
    assert result.exit_code == 0, result.output
    return result


def without_time(document: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard document (or several keyed by tier) without `generated_at`."""
    return {
        k: without_time(v) if isinstance(v, dict) else v
        for k, v in document.items()
        if k != "generated_at"
    }


def leaderboard_runs(uri: str, experiment_id: str) -> list[Run]:
    return MlflowClient(uri).search_runs(
        [experiment_id], f"tags.`{KIND_TAG}` = '{KIND_LEADERBOARD}'"
    )


def test_json_is_the_library_leaderboard(judged: JudgedExperiment) -> None:
    human, auto = leaderboards_for(judged.store, judged.name)
    one = json.loads(compare(judged, "--tier", "human", "--format", "json", "--no-log").stdout)
    assert without_time(one) == without_time(human.to_dict())
    both = json.loads(compare(judged, "--format", "json", "--no-log").stdout)
    assert set(both) == {"human", "auto"}
    assert without_time(both["auto"]) == without_time(auto.to_dict())


def test_csv_has_a_line_per_row_of_each_tier(judged: JudgedExperiment) -> None:
    human, auto = leaderboards_for(judged.store, judged.name)
    lines = list(csv.DictReader(io.StringIO(compare(judged, "--format", "csv", "--no-log").stdout)))
    assert [(line["tier"], line["model"], line["rank"]) for line in lines] == [
        ("human", r.model, str(r.rank or "")) for r in human.rows
    ] + [("auto", r.model, str(r.rank or "")) for r in auto.rows]
    beta = next(line for line in lines if line["tier"] == "human" and line["model"] == BETA)
    row = human.row(BETA, "v1")
    assert float(beta["composite"]) == row.composite
    assert float(beta["ci_low"]) == row.ci_low and float(beta["ci_high"]) == row.ci_high
    assert row.vs_leader is not None
    assert float(beta["vs_leader_p_value"]) == row.vs_leader.p_value
    assert beta["tied_with_leader"] == "False"
    assert lines[0]["vs_leader_diff"] == ""  # the leader


def test_markdown_and_table(judged: JudgedExperiment) -> None:
    markdown = compare(judged, "--tier", "human", "--format", "md", "--no-log").stdout
    assert markdown.startswith(f"## Leaderboard: {judged.name} · human judge")
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 + 4  # header, alignment, four cells
    assert f"`{ALPHA}` | `v1` | **14.17**" in rows[2] and "| leader |" in rows[2]
    assert "−2.33 [" in rows[3] and "| 0.031 |" in rows[3]
    assert "_insufficient data_" in rows[5]

    text = compare(judged, "--no-log").stdout
    assert "human judge · 21 judged runs, 3 of 4 cells ranked" in text
    assert "auto judge · 16 judged runs, 3 of 3 cells ranked" in text
    assert "not ranked" in text and GAMMA in text and "14.17" in text


def test_chart_is_drawn(judged: JudgedExperiment, tmp_path: Path) -> None:
    path = tmp_path / "board.png"
    result = compare(judged, "--plot", str(path), "--no-log")
    assert f"chart: {path}" in result.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 20_000
    pixels = (imread(path)[:, :, :3] * 255).round().astype(int)
    height, width, _ = pixels.shape
    assert width > height > 300  # two panels side by side

    def share(colour: str) -> float:
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        return float(np.all(pixels == rgb, axis=2).mean())

    assert share(_LEADER) > 0.005  # each panel's leader bar
    assert share(_UNRANKED) > 0.001  # alpha|v2, too little data


def test_leaderboard_is_logged_to_the_experiment(judged: JudgedExperiment, tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    printed = compare(judged, "--format", "json", "--plot", str(path))
    assert "logged to MLflow: run" in printed.stderr
    [run] = leaderboard_runs(judged.uri, judged.experiment_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["tier"] == "both"
    assert run.data.tags["human_leader"] == f"{ALPHA}|v1"
    assert run.data.tags["auto_leader"] == f"{BETA}|v1"
    assert run.data.metrics["leader_composite"] == pytest.approx(85 / 6)
    assert run.data.metrics["auto_leader_composite"] == pytest.approx(12.0)
    assert run.data.metrics["ranked_cells"] == 3
    client = MlflowClient(judged.uri)
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert names == {"leaderboard.json", "leaderboard.md", "leaderboard.csv", "leaderboard.png"}
    with tempfile.TemporaryDirectory() as tmp:
        logged = Path(client.download_artifacts(run.info.run_id, "leaderboard.json", tmp))
        assert json.loads(logged.read_text()) == json.loads(printed.stdout)
        png = Path(client.download_artifacts(run.info.run_id, "leaderboard.png", tmp))
        assert png.read_bytes() == path.read_bytes()
    # The leaderboard run is not a cell: a second compare reads the same cells.
    again = json.loads(compare(judged, "--format", "json").stdout)
    assert without_time(again) == without_time(json.loads(printed.stdout))
    assert len(leaderboard_runs(judged.uri, judged.experiment_id)) == 2


def test_no_log_writes_nothing(judged: JudgedExperiment) -> None:
    compare(judged, "--no-log")
    assert leaderboard_runs(judged.uri, judged.experiment_id) == []


def test_tracking_failure_is_only_a_warning(
    judged: JudgedExperiment, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuse)
    result = compare(judged, "--tier", "human", "--format", "json")
    assert json.loads(result.stdout)["leader"]["model"] == ALPHA
    assert "warning: leaderboard not logged: " in result.stderr and "disk full" in result.stderr
    assert leaderboard_runs(judged.uri, judged.experiment_id) == []  # nothing half written


def test_experiment_without_judged_runs(sqlite_uri: str, experiment: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    write_cells(store.client, experiment_id, [JudgedCell(ALPHA, "v1", "s1")])
    judged = JudgedExperiment(sqlite_uri, experiment, experiment_id, store)
    result = compare(judged)
    assert result.stdout == ""
    assert f"nothing to compare: no judged runs in experiment {experiment!r}" in result.stderr
    document = json.loads(compare(judged, "--format", "json").stdout)
    assert document["human"]["rows"] == [] and document["auto"]["leader"] is None
    assert leaderboard_runs(sqlite_uri, experiment_id) == []


def test_bad_input_is_one_line_and_exit_2(sqlite_uri: str) -> None:
    TrackingStore(sqlite_uri).experiment_id("exists", create=True)
    for args, expected in (
        (["--experiment", "nope"], "error: no experiment 'nope' at sqlite:"),
        (["--experiment", "exists", "--tier", "crowd"], "'crowd' is not one of"),
        (["--experiment", "exists", "--min-scenarios", "0"], "0 is not in the range x>=1"),
    ):
        result = tipbench("compare", "--tracking-uri", sqlite_uri, *args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert expected in result.stderr


@pytest.mark.slow
def test_against_a_real_mlflow_server(
    mlflow_server: MlflowServer, experiment: str, tmp_path: Path
) -> None:
    judged = make_judged_experiment(mlflow_server.url, experiment)
    path = tmp_path / "chart.png"
    result = compare(judged, "--tier", "auto", "--format", "json", "--plot", str(path))
    printed = json.loads(result.stdout)
    assert printed["leader"] == {"model": BETA, "prompt_version": "v1"}
    [run] = leaderboard_runs(mlflow_server.url, judged.experiment_id)
    assert run.data.tags["tier"] == "auto"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/")
    client = MlflowClient(mlflow_server.url)
    with tempfile.TemporaryDirectory() as tmp:
        logged = Path(client.download_artifacts(run.info.run_id, "leaderboard.json", tmp))
        assert json.loads(logged.read_text()) == printed
        png = Path(client.download_artifacts(run.info.run_id, "leaderboard.png", tmp))
        assert png.read_bytes() == path.read_bytes()


def test_the_automatic_leaderboard_shows_its_judges_calibration(
    judged: JudgedExperiment,
) -> None:
    text = compare(judged).stdout
    assert f"judge {AUTO_JUDGE} is NOT calibrated: never checked" in " ".join(text.split())
    board = json.loads(compare(judged, "--format", "json").stdout)
    assert "calibration" not in board["human"]
    (status,) = board["auto"]["calibration"]
    assert (status["judge_model"], status["calibrated"], status["kappa"]) == (
        AUTO_JUDGE, False, None,
    )  # fmt: skip

    log_fake_calibration(judged.uri, AUTO_JUDGE, "echo")

    (status,) = json.loads(compare(judged, "--format", "json").stdout)["auto"]["calibration"]
    assert status["calibrated"] is True and status["kappa"]["tone"] == 1.0
    text = " ".join(compare(judged).stdout.split())
    assert f"judge {AUTO_JUDGE} is calibrated: κ relevance 1.00, actionability 1.00" in text
