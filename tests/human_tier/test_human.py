"""The human tier's file round trip on a real MLflow store: export, score, apply."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mlflow import MlflowClient

from support.cells import record_cells
from support.cli import assert_one_line_error, tipbench
from tipbench import ConfigError
from tipbench.human_tier import apply_judge_file, export_pending, json_schema
from tipbench.tracking import TrackingStore

SCHEMA_FILE = Path(__file__).parents[2] / "schemas" / "judge-file.schema.json"


def export(uri: str, experiment: str, path: Path) -> dict[str, Any]:
    export_pending(TrackingStore(uri), experiment, path)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def score_all(data: dict[str, Any], relevance: int = 4) -> None:
    for item in data["items"]:
        for candidate in item["candidates"]:
            candidate["scores"].update(relevance=relevance, actionability=3, tone=5)


def save(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data))
    return path


def apply(uri: str, experiment: str, path: Path) -> Any:
    return apply_judge_file(TrackingStore(uri), experiment, path, judged_by="alice")


def test_export_lists_pending_runs_with_rubric_and_prefilled_flags(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment, prompts=("v1", "v2-mentor"))
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")

    jsonschema.validate(data, json.loads(SCHEMA_FILE.read_text()))
    assert data["schema_version"] == 2 and data["experiment"] == experiment
    assert len(data["export_id"]) == 16
    assert all(item["scores_version"] == 0 for item in data["items"])  # never scored yet
    assert data["rubric"]["id"] == "tip-v1" and "## relevance (1-5)" in data["rubric"]["text"]
    assert sorted(item["run_id"] for item in data["items"]) == sorted(run_ids)
    item = data["items"][0]
    assert "model" not in item and "prompt_version" not in item  # blind by default
    assert item["scenario"]["id"].startswith("student-")
    assert item["scenario"]["tasks"]
    first = next(c for c in item["candidates"] if c["id"] == "c1")
    assert first["text"] == "Start the lab report intro now."
    assert first["scores"] == {
        "relevance": None, "actionability": None, "tone": None, "format_ok": 1, "overlong": 0,
    }  # fmt: skip


def test_shipped_json_schema_is_current() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_apply_records_complete_runs_and_leaves_partial_ones_pending(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    complete_id, partial_id = record_cells(sqlite_uri, experiment)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    score_all(data)
    partial = next(i for i in data["items"] if i["run_id"] == partial_id)
    partial["candidates"][1]["scores"]["tone"] = None

    result = apply(sqlite_uri, experiment, save(data, tmp_path / "scored.json"))

    assert (result.applied, result.unchanged, result.incomplete) == (1, 0, 1)
    client = MlflowClient(sqlite_uri)
    run = client.get_run(complete_id)
    assert run.data.metrics["relevance"] == 4 and run.data.metrics["tone"] == 5
    assert run.data.metrics["format_ok"] == 1 and run.data.metrics["overlong"] == 0
    assert run.data.metrics["composite"] == 4 + 3 + 5 + 2 - 0
    tags = run.data.tags
    assert tags["judge_pending"] == "false" and tags["judge_kind"] == "human"
    assert tags["judged_by"] == "alice" and tags["judged_at"].startswith("20")
    artifact = Path(client.download_artifacts(complete_id, "human_scores.json", str(tmp_path)))
    assert json.loads(artifact.read_text())["candidates"]["c2"]["composite"] == 14
    assert client.get_run(partial_id).data.tags["judge_pending"] == "true"
    again = export(sqlite_uri, experiment, tmp_path / "again.json")
    assert [i["run_id"] for i in again["items"]] == [partial_id]


def test_reapplying_is_idempotent_and_changes_keep_the_earlier_version(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    score_all(data, relevance=4)
    path = save(data, tmp_path / "scored.json")
    apply(sqlite_uri, experiment, path)
    second = apply(sqlite_uri, experiment, path)
    assert (second.applied, second.unchanged) == (0, 1)

    score_all(data, relevance=2)
    apply(sqlite_uri, experiment, save(data, tmp_path / "rescored.json"))

    client = MlflowClient(sqlite_uri)
    history = client.get_metric_history(run_id, "relevance")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [(1, 4), (2, 2)]
    assert client.get_run(run_id).data.metrics["relevance"] == 2
    versions = {a.path for a in client.list_artifacts(run_id, "human_scores")}
    assert versions == {"human_scores/v1.json", "human_scores/v2.json"}


def _break(data: dict[str, Any], how: str, foreign_run: str) -> str | None:
    item = data["items"][0]
    candidate = item["candidates"][0]
    if how == "out of range":
        candidate["scores"]["relevance"] = 6
        return f"items[0] (run {{run}}) candidates[0] ({candidate['id']}) scores.relevance"
    if how == "unknown run":
        item["run_id"] = "0" * 32
        return f"items[0] (run {'0' * 32}): not a judgeable cell run"
    if how == "foreign run":
        item["run_id"] = foreign_run
        return f"items[0] (run {foreign_run}): not a judgeable cell run"
    if how == "unknown candidate":
        candidate["id"] = "c9"
        return "items[0] (run {run}): unknown candidate id 'c9'"
    if how == "duplicate run":
        data["items"].append(json.loads(json.dumps(item)))
        return "items[2] (run {run}): run listed twice"
    if how == "duplicate candidate":
        item["candidates"][1]["id"] = candidate["id"]
        return f"items[0] (run {{run}}): candidate {candidate['id']} listed twice"
    if how == "schema version":
        data["schema_version"] = 7
        return "schema_version 7 is not supported"
    return None


@pytest.mark.parametrize(
    "how",
    [
        "out of range",
        "unknown run",
        "foreign run",
        "unknown candidate",
        "duplicate run",
        "duplicate candidate",
        "schema version",
        "truncated",
    ],
)
def test_bad_files_are_refused_whole(
    sqlite_uri: str, experiment: str, tmp_path: Path, how: str
) -> None:
    (foreign,) = record_cells(sqlite_uri, experiment + "-other", n_scenarios=1)
    run_ids = record_cells(sqlite_uri, experiment)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    score_all(data)  # every run complete: a valid file would write them all
    expected = _break(data, how, foreign)
    path = tmp_path / "bad.json"
    if how == "truncated":
        path.write_text(json.dumps(data)[:-40])
        expected = "not valid JSON at line 1 column"
    else:
        save(data, path)

    with pytest.raises(ConfigError) as raised:
        apply(sqlite_uri, experiment, path)

    assert str(raised.value).startswith(f"{path}: ")
    assert expected is not None
    assert expected.format(run=data["items"][0]["run_id"]) in str(raised.value)
    client = MlflowClient(sqlite_uri)
    assert all(client.get_run(r).data.tags["judge_pending"] == "true" for r in run_ids)


def test_cli_round_trip_and_one_line_error(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    def judge(*args: str) -> subprocess.CompletedProcess[str]:
        return tipbench("judge", *args, "--experiment", experiment, "--tracking-uri", sqlite_uri)

    record_cells(sqlite_uri, experiment)
    out = tmp_path / "judge.json"
    exported = judge("export", "--out", str(out))
    assert exported.returncode == 0 and "exported 2 runs (4 candidates) to" in exported.stdout
    data = json.loads(out.read_text())
    score_all(data)
    save(data, out)
    applied = judge("apply", str(out), "--judge", "bob")
    assert applied.returncode == 0, applied.stderr
    assert "applied 2 runs, 0 unchanged, 0 not completely scored yet" in applied.stdout

    out.write_text('{"schema_version": 1, "items": [')
    broken = judge("apply", str(out))
    error = assert_one_line_error(broken, f"{out}: not valid JSON at line 1 column 33")
    assert (
        broken.stderr.strip()
        == error
        == f"error: {out}: not valid JSON at line 1 column 33: the file ends before the JSON "
        "does (truncated?)"
    )
