"""`tipbench compare --tier online` and `tipbench promote --online-log` as a user runs them,
on a real MLflow store with judged runs and a decision log whose tips name those runs
(issue 49, items 2, 3, 5 and 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from support.calibrations import log_fake_calibration
from support.cli import assert_one_line_error, tipbench
from support.judged_runs import AUTO_JUDGE, JudgedCell, uniform, write_cells
from support.online_worlds import OnlineWorld
from tipbench.promote import promote_prompt
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

MODEL = "ollama:qwen2.5:1.5b"
SCENARIOS = [s.id for s in load_suite().scenarios]


def judged(uri: str, experiment: str, composites: dict[str, int]) -> dict[str, str]:
    """Every scenario of each prompt judged by both tiers with `composites[prompt]`; returns
    a run id of each prompt (what the log's provenance names)."""
    log_fake_calibration(uri, AUTO_JUDGE, "echo")
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(experiment, create=True)
    cells = [
        JudgedCell(MODEL, prompt, scenario, human=uniform(value), auto=uniform(value))
        for prompt, value in composites.items()
        for scenario in SCENARIOS
    ]
    run_ids = write_cells(store.client, experiment_id, cells)
    suite = load_suite()
    for cell, run_id in zip(cells, run_ids, strict=True):  # the template collect recorded
        store.client.set_tag(run_id, "prompt_hash", suite.prompt(cell.prompt_version).template_hash)
    return {cell.prompt_version: run_id for cell, run_id in zip(cells, run_ids, strict=True)}


def test_compare_online_ranks_by_users_and_shows_a_contrary_rubric(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """The rubric ranks v1 first (13, 11, 9); users do best with v2-mentor's tips and worst
    with v1's: the online tier ranks v2-mentor first and the composite is shown disagreeing."""
    runs = judged(sqlite_uri, experiment, {"v1": 13, "v3-few-shot": 11, "v2-mentor": 9})
    world = OnlineWorld(model=MODEL, experiment=experiment, runs=runs)
    log = world.write(tmp_path / "log.jsonl", 3, 3000)
    base = ("compare", "--tier", "online", "--experiment", experiment,
            "--tracking-uri", sqlite_uri, "--decision-log", str(log))  # fmt: skip
    result = tipbench(*base, "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    order = [row["prompt_version"] for row in document["rows"]]
    assert order == ["v2-mentor", "v3-few-shot", "v1"]
    assert document["rows"][0]["standing"] == "leader"
    assert document["rows"][2]["standing"] == "behind"
    tiers = {found["tier"]: found for found in document["agreement"]}
    assert set(tiers) == {"human", "auto"}
    for found in tiers.values():
        verdicts = {c["criterion"]: c["verdict"] for c in found["criteria"]}
        assert verdicts["composite"] == "disagrees"
        assert verdicts["relevance"] == "no spread"
    table = tipbench(*base)
    assert table.returncode == 0, table.stderr
    assert "online tier" in table.stdout and "disagrees" in table.stdout
    assert_one_line_error(tipbench(*base, "--format", "csv"), "--tier online prints")
    assert_one_line_error(tipbench(*base, "--log"), "drop --plot and --log")
    human = ("compare", "--tier", "human", "--experiment", experiment, "--tracking-uri", sqlite_uri)
    assert_one_line_error(tipbench(*human, "--decision-log", str(log)), "goes with --tier online")


def test_bad_logs_are_one_line(sqlite_uri: str, experiment: str, tmp_path: Path) -> None:
    runs = judged(sqlite_uri, experiment, {"v1": 13, "v2-mentor": 9})
    base = ("compare", "--tier", "online", "--experiment", experiment,
            "--tracking-uri", sqlite_uri, "--decision-log")  # fmt: skip
    unknown = OnlineWorld(model=MODEL, experiment=experiment, runs={**runs, "v3-few-shot": "f00d"})
    result = tipbench(*base, str(unknown.write(tmp_path / "unknown.jsonl", 1, 300)))
    assert_one_line_error(result, "'f00d'", "the tracking store has no such run")
    elsewhere = OnlineWorld(model=MODEL, experiment="another-experiment", runs=runs)
    result = tipbench(*base, str(elsewhere.write(tmp_path / "elsewhere.jsonl", 1, 300)))
    assert_one_line_error(result, "not a run of experiment 'another-experiment'")
    twice = tmp_path / "twice.jsonl"
    lines = OnlineWorld(model=MODEL).write(tmp_path / "once.jsonl", 1, 300).read_text()
    twice.write_text(lines + lines.splitlines()[7] + "\n")
    assert_one_line_error(tipbench(*base, str(twice)), "twice")
    both = tipbench(*base, str(twice), "--state-url", f"sqlite:///{tmp_path / 's.sqlite'}")
    assert_one_line_error(both, "give --decision-log or --state-url, not both")
    nothing = tipbench(*base[:-1], "--state-url", f"sqlite:///{tmp_path / 'none.sqlite'}")
    assert_one_line_error(nothing, "none.sqlite")
    promote = tipbench("promote", "--experiment", experiment, "--tracking-uri", sqlite_uri,
                       "--online-log", str(twice), "--online-state-url", "sqlite:///x")  # fmt: skip
    assert_one_line_error(promote, "give --online-log or --online-state-url, not both")


def promote_json(uri: str, experiment: str, *args: str) -> tuple[int, Any]:
    result = tipbench("promote", "--experiment", experiment, "--tracking-uri", uri,
                      "--format", "json", *args)  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def online_checks(decision: Any) -> list[Any]:
    return [c for c in decision["conditions"] if c["name"] == "not worse online"]


def test_promote_counts_the_online_tier(sqlite_uri: str, experiment: str, tmp_path: Path) -> None:
    """v2-mentor beats v1 (production) in both tiers. Its tips doing worse with users refuses
    it; doing better, or a log without traffic for both, decides as the judges do."""
    runs = judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13})
    promote_prompt(MlflowClient(sqlite_uri), "tipbench-tips", load_suite().prompt("v1"), {})

    code, decision = promote_json(sqlite_uri, experiment)
    assert code == 0 and decision["prompt_version"] == "v2-mentor"
    assert online_checks(decision) == []

    worse = OnlineWorld(model=MODEL, experiment=experiment, runs=runs,
                        effects={"v1": 0.15, "v2-mentor": -0.1, "v3-few-shot": 0.0})  # fmt: skip
    log = worse.write(tmp_path / "worse.jsonl", 2, 3000)
    code, decision = promote_json(sqlite_uri, experiment, "--online-log", str(log))
    online = online_checks(decision)
    assert code == 3 and len(online) == 1 and not online[0]["passed"]
    assert "worse with users" in online[0]["figure"]
    evidence = decision["evidence"]["online"]
    assert evidence["candidate"] == f"{MODEL}|v2-mentor" and evidence["difference"]["high"] < 0

    better = OnlineWorld(model=MODEL, experiment=experiment, runs=runs)
    log = better.write(tmp_path / "better.jsonl", 2, 3000)
    code, decision = promote_json(sqlite_uri, experiment, "--online-log", str(log))
    online = online_checks(decision)
    assert code == 0 and online[0]["passed"]

    other = OnlineWorld(model="llamacpp:smollm2-135m")  # tips of another model only
    log = other.write(tmp_path / "other.jsonl", 2, 500)
    code, decision = promote_json(sqlite_uri, experiment, "--online-log", str(log))
    online = online_checks(decision)
    assert code == 0 and online[0]["passed"] and "decided without it" in online[0]["figure"]

    text = tipbench("promote", "--experiment", experiment, "--tracking-uri", sqlite_uri,
                    "--online-log", str(tmp_path / "worse.jsonl"))  # fmt: skip
    assert text.returncode == 3 and "[ ] not worse online:" in text.stdout
    assert "dry run: nothing changed" in text.stdout
