"""The judging API on a real store: partial scores kept as drafts, and the same rule as
`judge apply` for scores changed meanwhile (a page save refused over a newer version, a
stale judge file refused after a page save)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mlflow import MlflowClient

from support.cells import record_cells
from support.cli import tipbench
from tipbench.admin import create_app

TOKEN = "judging-api-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WHEN = r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, sqlite_uri: str) -> TestClient:
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    return TestClient(create_app(), headers=AUTH)


def next_item(client: TestClient, experiment: str) -> dict[str, Any]:
    response = client.get(f"/api/bench/judging/{experiment}/next")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def save(client: TestClient, experiment: str, item: dict[str, Any], **params: Any) -> Any:
    return client.post(f"/api/bench/judging/{experiment}/scores", params=params, json=item)


def score(candidate: dict[str, Any], relevance: int) -> None:
    candidate["scores"].update(relevance=relevance, actionability=3, tone=4)


def test_partial_scores_are_a_draft_the_next_load_fills_in(
    client: TestClient, sqlite_uri: str, experiment: str
) -> None:
    record_cells(sqlite_uri, experiment)
    first = next_item(client, experiment)
    item = first["item"]
    assert first["number"] in (1, 2) and first["total"] == 2  # its place, not its run id
    assert item["scores_version"] == 0
    score(item["candidates"][0], relevance=5)

    saved = save(client, experiment, item, judge="alice")

    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert (body["applied"], body["drafted"], body["incomplete"], body["scores_version"]) == (
        0, 1, 1, 1,
    )  # fmt: skip
    assert (body["remaining_runs"], body["remaining_candidates"]) == (2, 4)
    again = next_item(client, experiment)  # a reload: the same run, the score kept
    assert again["item"]["run_id"] == item["run_id"] and again["number"] == first["number"]
    assert again["item"]["scores_version"] == 1
    kept = again["item"]["candidates"][0]["scores"]
    assert (kept["relevance"], kept["actionability"], kept["tone"]) == (5, 3, 4)
    run = MlflowClient(sqlite_uri).get_run(item["run_id"])
    assert run.data.tags["judge_pending"] == "true" and run.data.tags["human_draft_by"] == "alice"


def test_a_save_over_a_version_loaded_elsewhere_is_refused(
    client: TestClient, sqlite_uri: str, experiment: str
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=1)
    mine, theirs = next_item(client, experiment)["item"], next_item(client, experiment)["item"]
    for candidate in theirs["candidates"]:
        score(candidate, relevance=2)
    assert save(client, experiment, theirs, judge="alice").json()["applied"] == 1
    for candidate in mine["candidates"]:
        score(candidate, relevance=5)

    refused = save(client, experiment, mine, judge="bob")

    assert refused.status_code == 409
    assert re.fullmatch(
        rf"scored since you loaded it \(version 1, by alice on the judging page at {WHEN}\): "
        "reload to see those scores",
        refused.json()["detail"],
    ), refused.json()
    client_ = MlflowClient(sqlite_uri)
    assert client_.get_run(mine["run_id"]).data.metrics["relevance"] == 2
    forced = save(client, experiment, mine, judge="bob", force="true")
    assert forced.status_code == 200 and forced.json()["scores_version"] == 2
    assert client_.get_run(mine["run_id"]).data.metrics["relevance"] == 5


def test_a_save_must_say_which_version_it_loaded(client: TestClient, experiment: str) -> None:
    item = {"run_id": "r1", "scenario": {}, "candidates": [{"id": "c1", "text": "t", "scores": {}}]}

    response = save(client, experiment, item)

    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "scores_version"] and error["msg"] == "Field required"


def test_a_stale_judge_file_applied_after_a_page_save_is_refused(
    client: TestClient, sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment)
    out = tmp_path / "judge.json"
    exported = tipbench(
        "judge", "export", "--experiment", experiment, "--tracking-uri", sqlite_uri,
        "--out", str(out),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    page = next_item(client, experiment)["item"]  # meanwhile, bob scores a run on the page
    for candidate in page["candidates"]:
        score(candidate, relevance=5)
    assert save(client, experiment, page, judge="bob").json()["applied"] == 1
    data = json.loads(out.read_text())  # alice scores the whole file
    for item in data["items"]:
        for candidate in item["candidates"]:
            score(candidate, relevance=1)
    out.write_text(json.dumps(data, indent=2))

    applied = tipbench(
        "judge", "apply", str(out), "--experiment", experiment, "--tracking-uri", sqlite_uri,
        "--judge", "alice",
    )  # fmt: skip

    assert applied.returncode == 1
    assert applied.stdout.startswith(
        "applied 1 run, 0 unchanged, 0 not completely scored yet, 1 refused\n"
    )
    index = [item["run_id"] for item in data["items"]].index(page["run_id"])
    assert re.search(
        rf"refused: items\[{index}\] \(run {page['run_id']}\): scored since this file was "
        rf"exported \(version 0 then, now version 1, by bob on the judging page at {WHEN}\)",
        applied.stderr,
    ), applied.stderr
    client_ = MlflowClient(sqlite_uri)
    bobs = client_.get_run(page["run_id"]).data
    assert (bobs.metrics["relevance"], bobs.tags["judged_by"]) == (5, "bob")
    (other,) = set(run_ids) - {page["run_id"]}
    alices = client_.get_run(other).data
    assert (alices.metrics["relevance"], alices.tags["judged_by"]) == (1, "alice")


def test_a_page_save_refreshes_the_logged_leaderboard_and_the_last_update(
    client: TestClient, sqlite_uri: str, experiment: str
) -> None:
    """After a save the logged `leaderboard` run says what `compare` says, and the bench
    panel's "Last update" (MLflow's own moves only when an experiment is renamed) counts
    the save: the experiment is listed first again."""
    record_cells(sqlite_uri, experiment)
    first = next_item(client, experiment)["item"]
    for candidate in first["candidates"]:
        score(candidate, relevance=4)
    assert save(client, experiment, first, judge="alice").json()["applied"] == 1
    logged = tipbench(
        "compare", "--experiment", experiment, "--tracking-uri", sqlite_uri, "--log",
    )  # fmt: skip
    assert logged.returncode == 0, logged.stderr
    newer = f"{experiment}-newer"
    record_cells(sqlite_uri, newer, n_scenarios=1)
    listed = client.get("/api/bench/experiments").json()
    assert [e["name"] for e in listed] == [newer, experiment]
    before = max(e["last_update_time"] for e in listed)

    second = next_item(client, experiment)["item"]
    for candidate in second["candidates"]:
        score(candidate, relevance=2)
    assert save(client, experiment, second, judge="bob").json()["applied"] == 1

    listed = client.get("/api/bench/experiments").json()
    assert [e["name"] for e in listed] == [experiment, newer]
    assert listed[0]["last_update_time"] > before
    client_ = MlflowClient(sqlite_uri)
    found = client_.get_experiment_by_name(experiment)
    assert found is not None
    (run,) = client_.search_runs([found.experiment_id], "tags.`tipbench.kind` = 'leaderboard'")
    assert run.data.metrics["judged_runs"] == 2 and run.data.tags["leaderboard_version"] == "2"
    board = client.get(f"/api/bench/leaderboard/{experiment}?tier=human").json()
    path = client_.download_artifacts(run.info.run_id, "leaderboard.json")
    document = json.loads(Path(path).read_text())
    assert document["n_runs"] == board["n_runs"] == 2
    assert document["rows"] == board["rows"]


def test_the_page_serves_the_judging_order_and_says_when_to_stop(
    client: TestClient, sqlite_uri: str, experiment: str
) -> None:
    """Issue 23: the run served is the judging order's, and each answer says how the
    judging stands; after the last judgement that decides it: you can stop."""
    from support.stop_experiment import human_scores, write_stop_experiment
    from tipbench.tracking import TrackingStore

    store = TrackingStore(sqlite_uri)
    open_runs = write_stop_experiment(store.client, store.experiment_id(experiment, create=True))
    first = next_item(client, experiment)
    assert first["item"]["run_id"] in open_runs
    assert first["judging"]["order"] == "active" and not first["judging"]["decided"]
    assert first["judging"]["message"].endswith("at least 2 more judgments expected")
    item = first["item"]
    judgings = []
    while item is not None:
        params = MlflowClient(sqlite_uri).get_run(item["run_id"]).data.params
        wanted = human_scores(params["prompt_version"], int(params["scenario_id"][1:]))
        for candidate in item["candidates"]:
            given = wanted[candidate["id"]].as_dict()
            candidate["scores"].update(
                {k: given[k] for k in ("relevance", "actionability", "tone")}
            )
        saved = save(client, experiment, item)
        assert saved.status_code == 200, saved.text
        judgings.append(saved.json()["judging"])
        item = next_item(client, experiment)["item"]
    assert len(judgings) == 4
    assert judgings[0]["message"].endswith("at least 1 more judgment expected")
    judging = judgings[1]  # two runs still open: the judge can stop
    assert judging.pop("detectable").startswith("8 scenarios: the gate can detect a gap of")
    assert judging == {
        "order": "active",
        "decided": True,
        "expected_more": None,
        "message": "the leader is decided: you can stop",
    }


def test_the_page_and_the_judge_file_number_a_run_alike(
    client: TestClient, sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """Issue 34: a run was `items[3]` in the judge file and "Item 2 of 9" on the page. Now
    the file gives each item its number, the one the page shows for the same run, and the
    numbers stay as runs are scored."""
    record_cells(sqlite_uri, experiment, prompts=("v1", "v2-mentor", "v3-few-shot"), n_scenarios=3)
    out = tmp_path / "judge.json"
    result = tipbench("judge", "export", "--experiment", experiment, "--out", str(out),
                      "--tracking-uri", sqlite_uri)  # fmt: skip
    assert result.returncode == 0, result.stderr
    numbers = {item["run_id"]: item["item"] for item in json.loads(out.read_text())["items"]}
    assert sorted(numbers.values()) == list(range(1, 10))

    for _ in range(3):  # the page's item, then the next once it is saved
        shown = next_item(client, experiment)
        item = shown["item"]
        assert shown["total"] == 9 and shown["number"] == numbers[item["run_id"]]
        assert item["item"] == shown["number"]
        for candidate in item["candidates"]:
            score(candidate, relevance=4)
        assert save(client, experiment, item).json()["applied"] == 1
    result = tipbench("judge", "export", "--experiment", experiment, "--out", str(out),
                      "--tracking-uri", sqlite_uri)  # fmt: skip
    again = {item["run_id"]: item["item"] for item in json.loads(out.read_text())["items"]}
    assert len(again) == 6 and all(numbers[run_id] == n for run_id, n in again.items())
