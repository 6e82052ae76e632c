"""The promotion gate on a real MLflow store and Prompt Registry: promote, and refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.calibrations import Answers, log_fake_calibration
from support.cli import tipbench
from support.judged_runs import AUTO_JUDGE, JudgedCell, uniform, write_cells
from tipbench import ConfigError
from tipbench.promote import production_prompt, promote, promote_prompt
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

MODEL = "ollama:qwen2.5:1.5b"
SCENARIOS = [s.id for s in load_suite().scenarios]  # 8


def judged(
    uri: str,
    experiment: str,
    human: dict[str, int],
    auto: dict[str, int],
    n: int = 8,
    judge: Answers | None = "echo",
) -> None:
    """Per prompt version, every scenario scored with the given composite by each tier.

    The automatic judge is calibrated as a judge answering `judge` would be (None: never).
    """
    if judge is not None:
        log_fake_calibration(uri, AUTO_JUDGE, judge)
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(experiment, create=True)
    cells = [
        JudgedCell(
            MODEL, prompt, scenario, human=uniform(human[prompt]), auto=uniform(auto[prompt])
        )
        for prompt in human
        for scenario in SCENARIOS[:n]
    ]
    run_ids = write_cells(store.client, experiment_id, cells)
    suite = load_suite()
    for cell, run_id in zip(cells, run_ids, strict=True):  # the template collect recorded
        store.client.set_tag(run_id, "prompt_hash", suite.prompt(cell.prompt_version).template_hash)


def cli(uri: str, experiment: str, *args: str) -> tuple[int, dict[str, object]]:
    result = tipbench(
        "promote", "--experiment", experiment, "--tracking-uri", uri, "--format", "json", *args
    )
    assert result.stderr == "" or "error" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def test_first_promotion_dry_run_then_apply(sqlite_uri: str, experiment: str) -> None:
    judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 8, "v2-mentor": 12})

    code, decision = cli(sqlite_uri, experiment)
    assert code == 0 and decision["promote"] is True and decision["applied"] is False
    assert decision["prompt_version"] == "v2-mentor" and decision["production"] is None
    assert production_prompt(MlflowClient(sqlite_uri), "tipbench-tips") is None  # dry run

    code, decision = cli(sqlite_uri, experiment, "--apply")
    assert code == 0 and decision["applied"] is True and decision["registry_version"] == 1
    client = MlflowClient(sqlite_uri)
    production = client.load_prompt("prompts:/tipbench-tips@production")
    assert production.tags["prompt_version"] == "v2-mentor"
    assert production.tags["model"] == MODEL
    assert "{{persona_name}}" in json.dumps(production.template)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    (record,) = client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'promotion'")
    assert record.data.tags["decision"] == "promoted"
    path = client.download_artifacts(record.info.run_id, "decision.json")
    evidence = json.loads(Path(path).read_text())
    assert [c["passed"] for c in evidence["conditions"]] == [True] * 5
    assert evidence["conditions"][2]["name"] == "ranks first"  # by the human tier's sequences
    assert evidence["conditions"][1]["name"] == "judge calibrated"
    assert evidence["evidence"]["calibration"][0]["calibrated"] is True
    assert evidence["evidence"]["human"]["composite"] == 13


def test_beating_production_needs_the_margin_and_significance(
    sqlite_uri: str, experiment: str
) -> None:
    promote_prompt(MlflowClient(sqlite_uri), "tipbench-tips", load_suite().prompt("v1"), {})
    judged(sqlite_uri, experiment, {"v1": 12, "v2-mentor": 13}, {"v1": 12, "v2-mentor": 13})

    code, decision = cli(sqlite_uri, experiment, "--apply", "--margin", "2")
    assert code == 3 and decision["promote"] is False and decision["production"] == "v1"
    (beats,) = [c for c in decision["conditions"] if c["name"] == "beats production"]
    assert not beats["passed"] and "below the margin 2" in beats["figure"]
    assert production_prompt(MlflowClient(sqlite_uri), "tipbench-tips").prompt_version == "v1"

    code, decision = cli(sqlite_uri, experiment, "--apply", "--margin", "0.5")
    assert code == 0 and decision["promote"] is True  # +1 on all 8 scenarios: p = 2/256
    assert production_prompt(MlflowClient(sqlite_uri), "tipbench-tips").prompt_version == (
        "v2-mentor"
    )


def test_tiers_that_disagree_refuse(sqlite_uri: str, experiment: str) -> None:
    judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 14, "v2-mentor": 10})

    code, decision = cli(sqlite_uri, experiment, "--apply")

    assert code == 3 and decision["applied"] is True and decision["registry_version"] is None
    (agree,) = [c for c in decision["conditions"] if c["name"] == "tiers agree"]
    assert not agree["passed"] and "significantly behind" in agree["figure"]
    assert production_prompt(MlflowClient(sqlite_uri), "tipbench-tips") is None


def test_an_inconclusive_automatic_tier_does_not_count_as_agreeing(
    sqlite_uri: str, experiment: str
) -> None:
    """On three scenarios the automatic tier puts the human leader 1 point behind its own
    leader everywhere: no p below 0.25 is attainable, so this is neither a tie nor a
    significant gap, and the gate does not read it as agreement (it used to: p ≥ 0.05)."""
    judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 12, "v2-mentor": 11}, n=3)

    result = promote(TrackingStore(sqlite_uri), experiment)

    assert not result.decision.promote
    (agree,) = [c for c in result.decision.conditions if c.name == "tiers agree"]
    assert not agree.passed
    assert "cannot tell whether" in agree.figure
    assert "is behind" in agree.figure
    assert "(p = 0.250, smallest attainable p = 0.25" in agree.figure


def test_too_little_judged_data_refuses(sqlite_uri: str, experiment: str) -> None:
    judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 8, "v2-mentor": 12}, n=2)

    result = promote(TrackingStore(sqlite_uri), experiment)

    assert not result.decision.promote
    assert "3+ human-judged scenarios" in result.decision.conditions[0].figure


def test_a_changed_template_is_not_promoted(sqlite_uri: str, experiment: str) -> None:
    judged(sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 8, "v2-mentor": 12})
    client = MlflowClient(sqlite_uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    for run in client.search_runs([exp.experiment_id], "params.prompt_version = 'v2-mentor'"):
        client.set_tag(run.info.run_id, "prompt_hash", "an-older-template")

    with pytest.raises(ConfigError, match="not the template that was judged"):
        promote(TrackingStore(sqlite_uri), experiment, apply=True)
    assert production_prompt(client, "tipbench-tips") is None


@pytest.mark.parametrize("judge", [None, "constant"])
def test_an_uncalibrated_automatic_tier_is_not_counted(
    sqlite_uri: str, experiment: str, judge: Answers | None
) -> None:
    """Both tiers rank v2-mentor first, but the automatic judge is not evidence."""
    judged(
        sqlite_uri, experiment, {"v1": 9, "v2-mentor": 13}, {"v1": 8, "v2-mentor": 12}, judge=judge
    )

    result = tipbench("promote", "--experiment", experiment, "--tracking-uri", sqlite_uri)

    assert result.returncode == 3, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"REFUSE {MODEL}|v2-mentor (production now: none)"
    assert lines[1] == (  # human scores from before any judging order: the tiers decide
        "decided by both tiers: the combined tier is refused: the human scores' sampling is "
        "unknown: they were given before any judging order (tipbench judge export or the "
        "judging page starts one)"
    )
    why = (
        "never checked against the calibration set of rubric tip-v1"
        if judge is None
        else "κ relevance 0.00, actionability 0.00, tone 0.00 on the calibration set, "
        "below the threshold 0.60"
    )
    assert lines[3] == (
        f"  [ ] judge calibrated: the automatic tier is not counted: judge {AUTO_JUDGE} "
        f"is NOT calibrated: {why}"
        + (
            f" (run: tipbench judge calibrate --judge-model {AUTO_JUDGE}); its scores are not "
            "evidence"
            if judge is None
            else "; its scores are not evidence"
        )
    )
    assert lines[4].startswith("  [x] ranks first: the human tier's confidence sequences put ")
    assert lines[5].startswith("  [ ] tiers agree: the automatic tier is not counted")
    assert "both tiers rank" not in result.stdout

    passing = tipbench(
        "promote", "--experiment", experiment, "--tracking-uri", sqlite_uri, "--min-kappa", "-1"
    )
    assert (passing.returncode == 0) is (judge is not None), passing.stdout


def test_an_empty_experiment_says_there_is_nothing_to_promote(
    sqlite_uri: str, experiment: str
) -> None:
    TrackingStore(sqlite_uri).experiment_id(experiment, create=True)
    result = tipbench("promote", "--experiment", experiment, "--tracking-uri", sqlite_uri)
    assert result.returncode == 3, result.stderr
    first = result.stdout.splitlines()[0]
    assert first == f"REFUSE nothing: no human leader in {experiment!r} to promote " \
        "(production now: none)"  # fmt: skip
    assert "None" not in result.stdout
