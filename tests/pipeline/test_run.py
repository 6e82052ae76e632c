"""`tipbench run` end to end on the embedded model and a real `mlflow server`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.cli import tipbench
from support.servers import MlflowServer
from tipbench.tracking import CELL_RUNS

pytestmark = pytest.mark.slow


def test_run_then_resume_then_judge_by_hand(
    mlflow_server: MlflowServer, experiment: str, tmp_path: Path
) -> None:
    judge_file, chart = tmp_path / "judge.json", tmp_path / "leaderboard.png"
    grid = [
        "--experiment", experiment, "--tracking-uri", mlflow_server.url,
        "--prompts", "v1,v2-mentor", "--n-scenarios", "3", "--n-tips", "2",
        "--max-tokens", "80", "--out", str(judge_file),
        # Every request schema-constrained, as before `--structured auto`: the counts below
        # are the model's answers under the schema (auto may take a free answer instead).
        "--structured", "schema",
    ]  # fmt: skip

    first = tipbench("run", *grid, "--plot", str(chart))

    assert first.returncode == 0, first.stderr
    out = first.stdout
    assert "6 cells: 0 already recorded, 6 collected, 0 failed" in out
    client = MlflowClient(mlflow_server.url)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    cells = client.search_runs([exp.experiment_id], CELL_RUNS)
    # What the model wrote (2 tips a cell within 80 tokens, or fewer: the llama.cpp build
    # decides), counted the same by every phase.
    tips = int(sum(r.data.metrics["candidate_count"] for r in cells))
    assert tips >= 10
    assert f"6 runs: 0 already auto-judged, 6 judged ({tips} candidates), 0 failed" in out
    assert f"waiting for the human judge: 6 runs ({tips} candidates), in {judge_file}" in out
    # `run` exported the file itself: its summary says where it is, not "run judge export".
    assert (
        f"no human-judged runs in experiment {experiment!r} yet: score {judge_file} (or on "
        f"the judging page of `tipbench serve`), then: tipbench judge apply --experiment "
        f"{experiment} {judge_file}"
    ) in out
    assert "judge export" not in out
    assert "auto judge" in out and "llamacpp:smollm2-135m" in out
    # No calibration of the embedded judge exists: the summary says its scores are not evidence.
    assert "judge llamacpp:smollm2-135m is NOT calibrated: never checked" in out
    # The README's grid: 3 scenarios can never promote, and run says so instead of counting
    # down judgments, with what to run instead (issue 31, items 5 and 6).
    assert "cannot be decided on 3 scenarios: collect at least 6" in out
    assert "more judgment" not in out
    assert (
        "warning: this grid can never promote a prompt: cannot be decided on 3 scenarios: "
        "collect at least 6 (tipbench run --n-scenarios 0 runs all 8 of the suite's scenarios)"
    ) in first.stderr
    assert chart.stat().st_size > 10_000
    assert len(cells) == 6 and all("auto_composite" in r.data.metrics for r in cells)
    assert client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'leaderboard'")

    # The human judges blind (no model or prompt in the file), and has scored the file
    # (not applied yet) when the same command runs again: the scores survive the re-run.
    data = json.loads(judge_file.read_text())
    assert "v2-mentor" not in judge_file.read_text() and "smollm2" not in judge_file.read_text()
    prompt_of = {r.info.run_id: r.data.params["prompt_version"] for r in cells}
    for item in data["items"]:
        for candidate in item["candidates"]:
            good = prompt_of[item["run_id"]] == "v2-mentor"
            candidate["scores"].update(relevance=4 if good else 2, actionability=3, tone=4)
    judge_file.write_text(json.dumps(data))

    again = tipbench("run", *grid)
    assert again.returncode == 0, again.stderr
    assert "6 cells: 6 already recorded, 0 collected, 0 failed" in again.stdout
    assert "model loads: none" in again.stdout
    assert "6 runs: 6 already auto-judged, 0 judged" in again.stdout
    assert (
        f"waiting for the human judge: 6 runs ({tips} candidates, {tips} already scored), in "
        f"{judge_file}"
    ) in again.stdout
    assert json.loads(judge_file.read_text())["items"] == data["items"]
    applied = tipbench(
        "judge", "apply", str(judge_file), "--experiment", experiment,
        "--tracking-uri", mlflow_server.url,
    )  # fmt: skip
    assert "applied 6 runs" in applied.stdout, applied.stderr

    board = tipbench(
        "compare", "--experiment", experiment, "--tracking-uri", mlflow_server.url,
        "--tier", "human", "--format", "json",
    )  # fmt: skip
    human = json.loads(board.stdout)
    # 3 scenarios cannot show a difference: v1 shares the first rank, undecided
    assert [(r["prompt_version"], r["rank"], r["standing"]) for r in human["rows"]] == [
        ("v2-mentor", 1, "leader"),
        ("v1", 1, "undecided"),
    ]
    assert human["anytime"]["message"] == "cannot be decided on 3 scenarios: collect at least 6"
    decision = tipbench(
        "promote", "--experiment", experiment, "--tracking-uri", mlflow_server.url,
    )  # fmt: skip
    # Both tiers have scores, the human's given in the judging order `run` started: the
    # combined tier decides (the embedded judge was never calibrated: it counts only as a
    # predictor, and the gate says so), and 3 scenarios are too few for a promotion.
    assert decision.returncode == 3, decision.stdout + decision.stderr
    lines = decision.stdout.splitlines()
    assert lines[0].startswith("REFUSE llamacpp:smollm2-135m|v2-mentor"), decision.stdout
    assert lines[1].startswith(
        "decided by the combined tier: both tiers have scores, drawn in the experiment's "
        "active judging order: 6 human-judged runs"
    ), decision.stdout
    assert lines[2].startswith(
        "  [ ] enough judged: llamacpp:smollm2-135m|v2-mentor: 3 scenarios, 3 human-judged runs"
    ), decision.stdout
    assert "judge llamacpp:smollm2-135m is NOT calibrated" in lines[3]  # reported, not required
    assert lines[4] == (
        "  [ ] ranks first: the leader is not decided: cannot be decided on 3 scenarios: "
        "collect at least 6"
    ), decision.stdout
    assert "dry run: nothing changed" in decision.stdout
