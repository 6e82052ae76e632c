"""Judge calibration: the figures, a judge that echoes the agreed scores (κ = 1) and one
that answers constants (κ = 0), the record in MLflow, and a real run on the embedded model."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient

from support.calibrations import FakeJudge, calibrate_fake, log_fake_calibration
from tipbench import SuiteError, TrackingError
from tipbench.auto_judge import (
    CALIBRATION_EXPERIMENT,
    FLAGS_NOTE,
    calibrate,
    calibration_figures,
    judge_calibration,
    log_calibration,
)
from tipbench.cli._judge_calibrate import show_calibration
from tipbench.suite import CRITERIA, SCORE_NAMES, bundled_suite_path, load_suite
from tipbench.tracking import Scores, TrackingStore

JUDGE = "openai:fake-judge"


def test_the_bundled_calibration_set_holds_the_rubrics_examples() -> None:
    suite = load_suite()
    calibration = suite.calibration
    assert calibration is not None and calibration.rubric_id == "tip-v1"
    assert len(calibration.tips) >= 30
    texts = {(t.scenario.id, " ".join(t.text.split())): t for t in calibration.tips}
    for criterion in suite.rubric.criteria:
        for level in criterion.levels:
            tip = texts[(level.example_scenario, " ".join(level.example_tip.split()))]
            assert tip.scores[criterion.name] == level.score
    for name in CRITERIA:  # every level of every criterion is represented
        assert {t.scores[name] for t in calibration.tips} == {1, 2, 3, 4, 5}
    for tip in calibration.tips:
        assert set(tip.scores) == set(SCORE_NAMES)
        assert tip.scores["format_ok"] == suite.rubric.format_ok(tip.text)


def _suite_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    shutil.copytree(bundled_suite_path(), folder)
    return folder


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("drop-example", "relevance level 1 example (engineer-morning) is not in the calibration"),
        ("example-score", "tip rubric-tone-3: tone 4, but the rubric's example of level 3"),
        ("few", "tips; a calibration set needs at least 30"),
        ("flag", "format_ok 0 disagrees with the rubric's rule (1)"),
        ("scenario", "unknown scenario 'nobody-noon'"),
    ],
)
def test_a_bad_calibration_set_is_refused_at_load_time(
    tmp_path: Path, change: str, message: str
) -> None:
    folder = _suite_copy(tmp_path)
    file = folder / "calibration.yaml"
    data = yaml.safe_load(file.read_text())
    tips = data["tips"]
    if change == "drop-example":
        del tips[0]
    elif change == "example-score":
        next(t for t in tips if t["id"] == "rubric-tone-3")["scores"]["tone"] = 4
    elif change == "few":
        data["tips"] = tips[:15]
    elif change == "flag":
        tips[20]["scores"]["format_ok"] = 0
    elif change == "scenario":
        tips[20]["scenario"] = "nobody-noon"
    file.write_text(yaml.safe_dump(data, allow_unicode=True))

    with pytest.raises(SuiteError) as raised:
        load_suite(folder)
    assert str(raised.value).startswith(f"{file}: ") and message in str(raised.value)


def test_figures_of_perfect_and_constant_answers() -> None:
    agreed = [Scores(1, 2, 3, 1, 0), Scores(5, 4, 3, 0, 0), Scores(3, 3, 5, 1, 1)]
    perfect = calibration_figures(agreed, agreed)
    assert all(perfect[name].kappa == 1.0 and perfect[name].exact == 1.0 for name in SCORE_NAMES)
    assert perfect["relevance"].confusion[0] == (1, 0, 0, 0, 0)

    constant = calibration_figures(agreed, [Scores(1, 1, 1, 0, 0)] * 3)
    assert constant["relevance"].kappa == 0.0 and constant["actionability"].kappa == 0.0
    assert constant["relevance"].exact == pytest.approx(1 / 3)
    assert constant["relevance"].within_1 == pytest.approx(1 / 3)
    assert constant["relevance"].confusion == (
        (1, 0, 0, 0, 0), (0, 0, 0, 0, 0), (1, 0, 0, 0, 0), (0, 0, 0, 0, 0), (1, 0, 0, 0, 0),
    )  # fmt: skip
    assert math.isnan(calibration_figures([], [])["tone"].kappa)


def test_a_judge_that_echoes_the_agreed_scores_is_calibrated(sqlite_uri: str) -> None:
    judge = FakeJudge(JUDGE, "echo")
    result = calibrate(JUDGE, backend=judge)

    tips = len(load_suite().calibration.tips)  # type: ignore[union-attr]
    assert judge.requests == tips and not judge.loaded  # unloaded at the end
    assert (result.tips, result.answered) == (tips, tips)
    assert all(result.figures[name].kappa == 1.0 for name in SCORE_NAMES)
    assert all(result.figures[name].within_1 == 1.0 for name in SCORE_NAMES)
    assert result.passes()

    run_id = log_fake_calibration(sqlite_uri, JUDGE, "echo")
    status = judge_calibration(TrackingStore(sqlite_uri), JUDGE, "tip-v1", result.calibration_hash)
    assert status.calibrated and status.run_id == run_id
    assert status.describe() == (
        f"judge {JUDGE} is calibrated: κ relevance 1.00, actionability 1.00, tone 1.00 on the "
        "calibration set (threshold 0.60)"
    )


def test_a_judge_that_answers_constants_is_not_calibrated(sqlite_uri: str) -> None:
    result = calibrate_fake(JUDGE, "constant")

    assert [result.figures[name].kappa for name in CRITERIA] == [0.0, 0.0, 0.0]
    assert not result.passes()
    log_fake_calibration(sqlite_uri, JUDGE, "constant")
    store = TrackingStore(sqlite_uri)
    status = judge_calibration(store, JUDGE, "tip-v1", result.calibration_hash)
    assert not status.calibrated
    assert status.describe().startswith(
        f"judge {JUDGE} is NOT calibrated: κ relevance 0.00, actionability 0.00, tone 0.00 "
        "on the calibration set, below the threshold 0.60"
    )
    other_set = judge_calibration(store, JUDGE, "tip-v1", "0" * 16)
    assert other_set.kappas is None and "never checked" in other_set.describe()


def test_the_judges_own_flags_are_reported_but_do_not_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A judge that answers format_ok 0 for every tip (as SmolLM2 did on all 35): its flag
    answers are reported where it scores them, marked as not used by the automatic tier."""
    result = calibrate_fake(JUDGE, "constant")
    assert result.figures["format_ok"].exact < 0.5  # the agreed flags are the rules': mostly 1
    document = result.to_dict()
    assert document["counted"] == list(CRITERIA) and "rules' flags" in document["flags_note"]
    assert set(document["criteria"]) == set(SCORE_NAMES)

    show_calibration(result, 0.6)
    out = capsys.readouterr().out
    format_ok = next(line for line in out.splitlines() if "format_ok" in line and "│" in line)
    assert "no: the rules' flag is used" in format_ok
    relevance = next(line for line in out.splitlines() if "relevance" in line and "│" in line)
    assert relevance.rstrip(" │").endswith("yes")
    assert f"note: {FLAGS_NOTE}" in out


def test_a_calibration_that_cannot_be_recorded_is_one_error_and_no_run(
    sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = calibrate_fake(JUDGE, "echo")
    store = TrackingStore(sqlite_uri)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuse)
    with pytest.raises(TrackingError) as raised:
        log_calibration(store, result)

    what = f"the calibration of {JUDGE}"
    assert str(raised.value) == f"cannot record {what} at {sqlite_uri}: disk full"
    experiment_id = store.experiment_id(CALIBRATION_EXPERIMENT)
    assert store.client.search_runs([experiment_id]) == []  # nothing half written
    status = judge_calibration(store, JUDGE, "tip-v1", result.calibration_hash)
    assert status.kappas is None and not status.calibrated


@pytest.mark.slow
@pytest.mark.timeout(3000)  # 35 judge calls; minutes on a machine busy with other work
def test_cli_calibrates_the_embedded_model_and_logs_it(sqlite_uri: str) -> None:
    """The real SmolLM2-135M on the whole calibration set, through the CLI."""
    result = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "judge", "calibrate",
         "--judge-model", "llamacpp:smollm2-135m", "--tracking-uri", sqlite_uri],
        capture_output=True, text=True, timeout=2900,
    )  # fmt: skip

    print(result.stdout)  # the figures, for the record (pytest -rP shows them)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())  # rich wraps the title to the terminal's width
    tips = len(load_suite().calibration.tips)  # type: ignore[union-attr]
    assert "llamacpp:smollm2-135m on the calibration set of rubric tip-v1" in out
    assert "confusion (rows: agreed score, columns: the judge's score)" in out
    assert "no: the rules' flag is used" in out and "format_ok and overlong are the judge's" in out
    assert "judge llamacpp:smollm2-135m is NOT calibrated: κ relevance" in out
    assert f"in '{CALIBRATION_EXPERIMENT}'" in out
    store = TrackingStore(sqlite_uri)
    experiment = store.client.get_experiment_by_name(CALIBRATION_EXPERIMENT)
    assert experiment is not None
    (run,) = store.client.search_runs([experiment.experiment_id])
    assert run.data.tags["judge_model"] == "llamacpp:smollm2-135m"
    assert run.data.tags["rubric"] == "tip-v1"
    assert run.data.tags["calibration_hash"] == load_suite().calibration.hash  # type: ignore[union-attr]
    assert run.data.metrics["tips"] == tips
    assert {f"kappa_{name}" for name in CRITERIA} <= set(run.data.metrics)
    answers = json.loads(
        Path(store.client.download_artifacts(run.info.run_id, "answers.json")).read_text()
    )
    assert len(answers["answers"]) == tips
    assert all(attempts and attempts[0]["text"] for attempts in answers["answers"].values())
