"""The judge file as a lazy human uses it, on a real MLflow store: never losing scores,
drafts of partly scored runs, every problem at once, blind and shuffled judging."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from support.cells import FIVE_TIPS, record_cells
from tipbench import ConfigError
from tipbench.human_tier import JudgeFileError, apply_judge_file, export_pending
from tipbench.tracking import TrackingStore


def export(uri: str, experiment: str, path: Path, **options: Any) -> dict[str, Any]:
    export_pending(TrackingStore(uri), experiment, path, **options)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def save(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def score(candidate: dict[str, Any], relevance: int = 4) -> None:
    candidate["scores"].update(relevance=relevance, actionability=3, tone=5)


def by_id(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in item["candidates"]}


def test_export_onto_a_file_with_scores_carries_them_over(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, tips=FIVE_TIPS)
    out = tmp_path / "judge.json"
    data = export(sqlite_uri, experiment, out)
    first = data["items"][0]
    score(by_id(first)["c2"], relevance=2)
    score(by_id(first)["c4"], relevance=5)
    save(data, out)  # the judge's work in progress, never applied

    result = export_pending(TrackingStore(sqlite_uri), experiment, out)

    again = json.loads(out.read_text())
    item = next(i for i in again["items"] if i["run_id"] == first["run_id"])
    assert by_id(item)["c2"]["scores"]["relevance"] == 2
    assert by_id(item)["c4"]["scores"]["relevance"] == 5
    assert by_id(item)["c1"]["scores"]["relevance"] is None
    assert (result.carried, result.scored) == (2, 2)
    assert [i["run_id"] for i in again["items"]] == [i["run_id"] for i in data["items"]]


@pytest.mark.parametrize("content", ['{"schema_version": 1, "items": [', '{"notes": "mine"}'])
def test_export_refuses_to_overwrite_what_it_cannot_read(
    sqlite_uri: str, experiment: str, tmp_path: Path, content: str
) -> None:
    record_cells(sqlite_uri, experiment)
    out = tmp_path / "judge.json"
    out.write_text(content)

    with pytest.raises(ConfigError) as raised:
        export_pending(TrackingStore(sqlite_uri), experiment, out)

    message = str(raised.value)
    assert "\n" not in message and "not overwritten" in message
    assert str(tmp_path / "judge-2.json") in message
    assert out.read_text() == content


def test_export_refuses_when_scores_of_judged_runs_were_not_applied(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """A file whose scores differ from what the store holds for runs no longer pending."""
    record_cells(sqlite_uri, experiment)
    out = tmp_path / "judge.json"
    data = export(sqlite_uri, experiment, out)
    for item in data["items"]:
        for candidate in item["candidates"]:
            score(candidate, relevance=4)
    apply_judge_file(TrackingStore(sqlite_uri), experiment, save(data, tmp_path / "a.json"))
    for candidate in data["items"][0]["candidates"]:
        score(candidate, relevance=1)  # re-scored in the file, not applied yet
    save(data, out)

    with pytest.raises(ConfigError, match="not overwritten: apply it first"):
        export_pending(TrackingStore(sqlite_uri), experiment, out)
    assert json.loads(out.read_text()) == data


def test_partial_scores_survive_a_round_trip_as_a_draft(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment, tips=FIVE_TIPS)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    partial = data["items"][0]
    score(by_id(partial)["c1"], relevance=2)
    score(by_id(partial)["c3"], relevance=5)
    by_id(partial)["c5"]["scores"]["tone"] = 4  # one criterion of a third candidate

    result = apply_judge_file(
        TrackingStore(sqlite_uri), experiment, save(data, tmp_path / "scored.json")
    )

    assert (result.applied, result.incomplete, result.drafted, result.untouched) == (0, 1, 1, 1)
    (pending,) = result.pending  # the untouched run is not "kept as a draft"
    assert (pending.item, pending.scored, pending.partly, pending.total) == (
        f"items[0] (run {partial['run_id']})",
        2,
        1,
        5,
    )
    client = MlflowClient(sqlite_uri)
    run = client.get_run(partial["run_id"])
    assert run.data.tags["judge_pending"] == "true" and "relevance" not in run.data.metrics

    fresh = export_pending(TrackingStore(sqlite_uri), experiment, tmp_path / "fresh.json")
    again = json.loads((tmp_path / "fresh.json").read_text())
    item = next(i for i in again["items"] if i["run_id"] == partial["run_id"])
    assert by_id(item)["c1"]["scores"] == {
        "relevance": 2, "actionability": 3, "tone": 5, "format_ok": 1, "overlong": 0,
    }  # fmt: skip
    assert by_id(item)["c3"]["scores"]["relevance"] == 5
    assert by_id(item)["c5"]["scores"]["tone"] == 4
    assert by_id(item)["c2"]["scores"]["relevance"] is None
    assert (fresh.runs, fresh.candidates, fresh.scored, fresh.partly) == (2, 10, 2, 1)

    for candidate in item["candidates"]:
        if candidate["scores"]["relevance"] is None:
            score(candidate, relevance=3)
    by_id(item)["c5"]["scores"].update(relevance=3, actionability=3)
    done = apply_judge_file(
        TrackingStore(sqlite_uri), experiment, save(again, tmp_path / "done.json")
    )
    assert done.applied == 1
    run = client.get_run(partial["run_id"])
    assert run.data.tags["judge_pending"] == "false" and "human_draft" not in run.data.tags
    assert run.data.metrics["relevance"] == (2 + 3 + 5 + 3 + 3) / 5
    assert sorted(run_ids) == sorted(i["run_id"] for i in data["items"])


def test_apply_reports_every_problem_at_once_and_writes_nothing(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    for item in data["items"]:
        for candidate in item["candidates"]:
            score(candidate)
    first, second = data["items"]
    first["candidates"][0]["scores"]["relevance"] = 7
    first["candidates"][1]["scores"]["tone"] = "five"
    second["candidates"][0]["id"] = "c9"
    path = save(data, tmp_path / "typos.json")

    with pytest.raises(JudgeFileError) as raised:
        apply_judge_file(TrackingStore(sqlite_uri), experiment, path)

    lines = str(raised.value).splitlines()
    c0, c1 = first["candidates"][0]["id"], first["candidates"][1]["id"]
    assert lines[0] == f"{path}: 3 problems, nothing written:"
    assert lines[1].startswith(
        f"  items[0] (run {first['run_id']}) candidates[0] ({c0}) scores.relevance: "
    )
    assert lines[2].startswith(
        f"  items[0] (run {first['run_id']}) candidates[1] ({c1}) scores.tone: "
    )
    assert lines[3] == f"  items[1] (run {second['run_id']}): unknown candidate id 'c9'"
    client = MlflowClient(sqlite_uri)
    assert all(client.get_run(r).data.tags["judge_pending"] == "true" for r in run_ids)


def test_a_trailing_comma_is_reported_on_its_own_line(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=1)
    out = tmp_path / "judge.json"
    export(sqlite_uri, experiment, out)
    lines = out.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith('"overlong"'))
    lines[at] += ","  # the last score of the first candidate, followed by "}" a line later
    out.write_text("\n".join(lines))

    with pytest.raises(ConfigError) as raised:
        apply_judge_file(TrackingStore(sqlite_uri), experiment, out)

    column = len(lines[at])
    assert str(raised.value) == (
        f"{out}: not valid JSON at line {at + 1} column {column}: trailing comma before }}"
    )


def test_the_judge_file_is_blind_unless_asked(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(
        sqlite_uri,
        experiment,
        models=("llamacpp:smollm2-135m", "ollama:qwen2.5:0.5b"),
        prompts=("v1", "v2-mentor", "v3-few-shot"),
        tips=FIVE_TIPS,
    )
    blind = tmp_path / "blind.json"
    export_pending(TrackingStore(sqlite_uri), experiment, blind, seed=7)
    text = blind.read_text()
    for name in ("smollm2", "qwen2.5", "v2-mentor", "v3-few-shot", '"model"', '"prompt_version"'):
        assert name not in text
    data = json.loads(text)
    assert data["order_seed"] == 7

    revealed = export(sqlite_uri, experiment, tmp_path / "revealed.json", reveal=True)
    names = [(i["model"], i["prompt_version"]) for i in revealed["items"]]
    assert ("ollama:qwen2.5:0.5b", "v3-few-shot") in names
    assert [c["id"] for c in revealed["items"][0]["candidates"]] == ["c1", "c2", "c3", "c4", "c5"]

    def order(seed: int) -> list[tuple[str, list[str]]]:
        path = tmp_path / f"seed-{seed}.json"
        export_pending(TrackingStore(sqlite_uri), experiment, path, seed=seed)
        items = json.loads(path.read_text())["items"]
        return [(i["run_id"], [c["id"] for c in i["candidates"]]) for i in items]

    assert order(7) == [(i["run_id"], [c["id"] for c in i["candidates"]]) for i in data["items"]]
    assert order(7) != order(8)
    run_order = [i["run_id"] for i in revealed["items"]]  # by run name: model, then prompt
    assert [run_id for run_id, _ in order(7)] != run_order
    assert any(ids != sorted(ids) for _, ids in order(7))


def test_cli_export_names_the_drafts_and_apply_the_incomplete_runs(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    def tipbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tipbench.cli", "judge", *args, "--experiment", experiment,
             "--tracking-uri", sqlite_uri],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    record_cells(sqlite_uri, experiment, tips=FIVE_TIPS)
    out = tmp_path / "judge.json"
    assert tipbench("export", "--out", str(out)).returncode == 0
    data = json.loads(out.read_text())
    item = data["items"][1]
    score(by_id(item)["c1"])
    score(by_id(item)["c2"])
    save(data, out)

    applied = tipbench("apply", str(out))
    assert applied.returncode == 0, applied.stderr
    assert f"not complete yet: items[1] (run {item['run_id']}): 2 of 5 candidates scored" in (
        applied.stdout
    )
    exported = tipbench("export", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "exported 2 runs (10 candidates, 2 already scored) to" in exported.stdout


def test_cli_typos_are_answered_before_the_store_is_opened(tmp_path: Path) -> None:
    """A missing judge file or experiment is reported without setting up (or creating) the
    store: no MLflow database appears just to say so."""
    from support.cli import assert_one_line_error, tipbench

    store = tmp_path / "missing.db"
    uri = f"sqlite:///{store}"
    missing_file = tmp_path / "nope.json"
    result = tipbench(
        "judge", "apply", "--experiment", "e", "--tracking-uri", uri, str(missing_file)
    )
    assert_one_line_error(result, f"{missing_file}: no such file")
    missing_file.write_text("{}")
    result = tipbench(
        "judge", "apply", "--experiment", "e", "--tracking-uri", uri, str(missing_file)
    )
    assert_one_line_error(result, "no experiment 'e'")
    out = tmp_path / "out.json"
    result = tipbench(
        "judge", "export", "--experiment", "e", "--tracking-uri", uri, "--out", str(out)
    )
    assert_one_line_error(result, "no experiment 'e'")
    assert not store.exists() and not out.exists()
