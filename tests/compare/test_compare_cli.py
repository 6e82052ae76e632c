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
from tipbench.compare import KIND_LEADERBOARD, STANDINGS, leaderboard_document, leaderboards_for
from tipbench.tracking import KIND_TAG, TrackingStore


def compare(judged: JudgedExperiment, *args: str, columns: int = 200) -> Result:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(
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
    assert without_time(one) == without_time(leaderboard_document(human))
    both = json.loads(compare(judged, "--format", "json", "--no-log").stdout)
    assert set(both) == {"human", "auto"}
    assert without_time(both["auto"]) == without_time(leaderboard_document(auto))


def test_csv_has_a_line_per_row_of_each_tier(judged: JudgedExperiment) -> None:
    human, auto = leaderboards_for(judged.store, judged.name)
    lines = list(csv.DictReader(io.StringIO(compare(judged, "--format", "csv", "--no-log").stdout)))
    assert [(line["tier"], line["model"], line["rank"]) for line in lines] == [
        ("human", r.model, str(r.rank or "")) for r in human.rows
    ] + [("auto", r.model, str(r.rank or "")) for r in auto.rows]
    beta = next(line for line in lines if line["tier"] == "human" and line["model"] == BETA)
    row = human.row(BETA, "v1")
    assert beta["composite"] == "11.83"  # rounded like the table: 71/6
    assert float(beta["interval_low"]) == round(row.interval.low, 2)
    assert float(beta["interval_high"]) == round(row.interval.high, 2)
    assert row.vs_leader is not None
    assert beta["vs_leader_difference_value"] == "-2.33" and beta["vs_leader_p_value"] == "0.031"
    assert beta["vs_leader_verdict"] == "different"
    assert (beta["standing"], beta["rank"], beta["rank_shared"]) == ("behind", "3", "False")
    assert beta["tied_with_leader"] == "False"
    assert lines[0]["vs_leader_difference_value"] == ""  # the leader


def test_markdown_and_table(judged: JudgedExperiment) -> None:
    markdown = compare(judged, "--tier", "human", "--format", "md", "--no-log").stdout
    assert markdown.startswith(f"## Leaderboard: {judged.name} · human judge")
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 + 4  # header, alignment, four cells
    assert rows[2].startswith(f"| 1= | `{ALPHA}` | `v1` | **14.17**")
    assert rows[2].endswith("| leader |")
    assert rows[3].startswith(f"| 1= | `{GAMMA}`") and rows[3].endswith("| undecided |")
    assert rows[4].startswith(f"| 3 | `{BETA}`") and "−2.33 [" in rows[4]
    assert rows[4].endswith("| 0.031 | behind |")
    assert "_too little data_" in rows[5]

    text = compare(judged, "--no-log").stdout
    assert "human judge · 21 judged runs, 3 of 4 cells ranked" in text
    assert "auto judge · 16 judged runs, 3 of 3 cells ranked" in text
    assert "too little data" in text and GAMMA in text and "14.17" in text


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

    assert share(STANDINGS["leader"].colour) > 0.005  # each panel's leader bar
    assert share(STANDINGS["too little data"].colour) > 0.001  # alpha|v2
    # gamma|v1 (human) and delta|v1 (auto) are undecided: never drawn as "behind".
    assert share(STANDINGS["undecided"].colour) > 0.002
    assert share(STANDINGS["behind"].colour) > 0.002  # beta|v1 (human), alpha|v1 (auto)


def test_leaderboard_is_logged_to_the_experiment(judged: JudgedExperiment, tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    printed = compare(judged, "--format", "json", "--plot", str(path), "--log")
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
    again = json.loads(compare(judged, "--format", "json", "--log").stdout)
    assert without_time(again) == without_time(json.loads(printed.stdout))
    assert len(leaderboard_runs(judged.uri, judged.experiment_id)) == 2


def test_looking_writes_nothing(judged: JudgedExperiment) -> None:
    for args in ((), ("--format", "json"), ("--tier", "auto", "--format", "csv"), ("--no-log",)):
        result = compare(judged, *args)
        assert "logged to MLflow" not in result.stderr
    assert leaderboard_runs(judged.uri, judged.experiment_id) == []


def test_tracking_failure_is_only_a_warning(
    judged: JudgedExperiment, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuse)
    result = compare(judged, "--tier", "human", "--format", "json", "--log")
    assert json.loads(result.stdout)["leader"]["model"] == ALPHA
    assert "warning: leaderboard not logged: " in result.stderr and "disk full" in result.stderr
    assert leaderboard_runs(judged.uri, judged.experiment_id) == []  # nothing half written


def test_table_fits_80_columns(judged: JudgedExperiment) -> None:
    narrow = compare(judged, columns=80).stdout  # piped, as in a test: COLUMNS decides
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80, narrow
    assert "tip-bench-test-" in narrow and "human judge · 21 judged runs" in narrow  # one line
    headings = next(line for line in lines if line.lstrip().startswith("#"))
    assert headings.split() == ["#", "model", "prompt", "comp.", "95%", "CI", "Δ", "p",
                                "standing"]  # fmt: skip
    beta = next(line for line in lines if " beta " in line and "v1" in line)
    assert beta.split() == ["3", "beta", "v1", "11.83", "[11.00,", "13.00]", "−2.33", "0.031",
                            "behind"]  # fmt: skip

    wide = compare(judged, columns=200).stdout
    assert max(len(line) for line in wide.splitlines()) <= 200
    headings = next(line for line in wide.splitlines() if line.lstrip().startswith("#"))
    for heading in ("composite", "relev.", "action.", "tone", "format ok", "overlong",
                    "scen.", "cand.", "Δ vs leader [CI]"):  # fmt: skip
        assert heading in headings
    assert f"  {BETA}  " in wide

    middle = compare(judged, columns=110).stdout  # the criteria go before the names shrink
    assert max(len(line) for line in middle.splitlines()) <= 110
    assert BETA in middle and "relev." not in middle and "composite" in middle


def test_comparisons_that_cannot_conclude_say_so(judged: JudgedExperiment) -> None:
    """gamma|v1 pairs with the human leader on three scenarios; delta|v1 trails the auto
    leader by exactly 1 on each of its three: no p below 0.25 is attainable, so neither is
    shown as tied nor as behind, and no interval of Δ exists (a bootstrap gave [−1, −1],
    which excluded 0 while p = 0.25)."""
    text = compare(judged).stdout
    assert text.count("smallest attainable p is 0.25 ≥ α = 0.05") == 2  # one per tier
    assert "judge at least 6 scenarios per cell" in text
    assert "none (–) on fewer than 6 scenarios" in " ".join(text.split())
    gamma = next(line for line in text.splitlines() if GAMMA in line)
    assert gamma.split()[0] == "1=" and gamma.rstrip().endswith("1.000*   undecided")
    delta = next(line for line in text.splitlines() if line.split()[1:2] == ["ollama:delta"])
    assert delta.split()[-3:] == ["−1.00", "0.250*", "undecided"]
    assert "[−1.00, −1.00]" not in delta and delta.split()[4] == "–"  # no interval of its own
    result = compare(judged, "--tier", "auto", "--format", "json")
    document = json.loads(result.stdout)
    row = next(r for r in document["rows"] if r["model"] == "ollama:delta")
    assert row["standing"] == "undecided" and row["vs_leader"]["verdict"] == "inconclusive"
    difference = row["vs_leader"]["difference"]
    assert difference["low"] is None and difference["method"] == "none"
    assert row["tied_with_leader"] is False
    assert "warning: auto tier: 1 comparison with the leader cannot be significant" in (
        result.stderr
    )


def test_chart_folder_is_made_and_a_bad_path_refused_before_any_work(
    judged: JudgedExperiment, tmp_path: Path
) -> None:
    path = tmp_path / "new" / "folder" / "board.png"
    compare(judged, "--plot", str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for bad in (blocker / "board.png", tmp_path):
        result = tipbench("compare", "--experiment", judged.name, "--tracking-uri", judged.uri,
                          "--plot", str(bad), "--log")  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith("error: Invalid value for '--plot': ")
    assert leaderboard_runs(judged.uri, judged.experiment_id) == []


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
    # A store that does not exist is not created just to say so.
    missing = sqlite_uri.replace("mlflow.db", "missing.db")
    result = tipbench("compare", "--tracking-uri", missing, "--experiment", "nope")
    assert result.returncode == 2 and result.stderr == f"error: no experiment 'nope' at {missing}\n"
    assert not Path(missing.removeprefix("sqlite:///")).exists()


@pytest.mark.slow
def test_against_a_real_mlflow_server(
    mlflow_server: MlflowServer, experiment: str, tmp_path: Path
) -> None:
    judged = make_judged_experiment(mlflow_server.url, experiment)
    path = tmp_path / "chart.png"
    result = compare(judged, "--tier", "auto", "--format", "json", "--plot", str(path), "--log")
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
