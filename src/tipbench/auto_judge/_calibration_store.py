"""Calibrations in MLflow: logged keyed by judge model, rubric and calibration-set hash,
and looked up wherever the automatic tier's scores are used as evidence.

Each calibration is a run of the experiment `CALIBRATION_EXPERIMENT` with the key as tags,
κ / exact / within-1 per criterion as metrics, and the whole result (confusion matrices
included) and the judge's raw answers as artifacts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipbench._errors import SuiteError, TipbenchError
from tipbench.auto_judge._calibration import DEFAULT_MIN_KAPPA, Calibration, passes
from tipbench.stats import json_number
from tipbench.suite import CRITERIA, SCORE_NAMES, load_suite
from tipbench.tracking import KIND_TAG, CellRun, RunRecord, TrackingStore, record_run

CALIBRATION_EXPERIMENT = "tipbench-calibration"
KIND_CALIBRATION = "calibration"
JUDGE_MODEL_TAG = "judge_model"
RUBRIC_TAG = "rubric"
HASH_TAG = "calibration_hash"


def _metric(kind: str, name: str) -> str:
    return f"{kind}_{name}"


def log_calibration(
    store: TrackingStore, calibration: Calibration, min_kappa: float = DEFAULT_MIN_KAPPA
) -> str:
    """Record a calibration as a run of `CALIBRATION_EXPERIMENT`; return its run id.

    Raises:
        TrackingError: the run could not be written (nothing half-written is left), in one line.
    """
    experiment_id = store.experiment_id(CALIBRATION_EXPERIMENT, create=True)
    metrics = {"tips": float(calibration.tips), "answered": float(calibration.answered)}
    for name, figures in calibration.figures.items():
        for kind in ("kappa", "exact", "within_1"):
            value = getattr(figures, kind)
            if not math.isnan(value):
                metrics[_metric(kind, name)] = float(value)
    answers = {
        tip: [answer.to_dict() for answer in attempts]
        for tip, attempts in calibration.answers.items()
    }
    judged = {tip: scores.as_dict() for tip, scores in calibration.judged.items()}
    record = RunRecord(
        run_name=f"{calibration.judge_model}|{calibration.rubric_id}|{calibration.calibration_hash}",
        params={"min_kappa": str(min_kappa)},
        tags={
            KIND_TAG: KIND_CALIBRATION,
            JUDGE_MODEL_TAG: calibration.judge_model,
            RUBRIC_TAG: calibration.rubric_id,
            HASH_TAG: calibration.calibration_hash,
            "calibrated": str(calibration.passes(min_kappa)).lower(),
        },
        metrics=metrics,
        artifacts={
            "calibration.json": json.dumps(calibration.to_dict(min_kappa), indent=2),
            "answers.json": json.dumps(
                {"judge_model": calibration.judge_model, "scores": judged, "answers": answers},
                indent=2,
                ensure_ascii=False,
            ),
        },
    )
    return record_run(store, experiment_id, record, f"the calibration of {calibration.judge_model}")


@dataclass(frozen=True)
class JudgeCalibration:
    """Whether a judge model's scores count as evidence, and why (for tables and the gate).

    `kappas` is None when the judge was never calibrated on this rubric's calibration set.
    """

    judge_model: str
    rubric_id: str
    min_kappa: float
    kappas: Mapping[str, float] | None = None
    answered: int = 0
    tips: int = 0
    run_id: str | None = None

    @property
    def calibrated(self) -> bool:
        if self.kappas is None:
            return False
        return passes(self.kappas, self.answered, self.tips, self.min_kappa)

    def describe(self) -> str:
        """One line: calibrated or not, with the κ per criterion and the threshold."""
        if self.kappas is None:
            return (
                f"judge {self.judge_model} is NOT calibrated: never checked against the "
                f"calibration set of rubric {self.rubric_id} (run: tipbench judge calibrate "
                f"--judge-model {self.judge_model}); its scores are not evidence"
            )
        kappas = ", ".join(f"{name} {_kappa(self.kappas.get(name))}" for name in CRITERIA)
        if self.calibrated:
            return (
                f"judge {self.judge_model} is calibrated: κ {kappas} on the calibration set "
                f"(threshold {self.min_kappa:.2f})"
            )
        answered = (
            f", answered {self.answered} of {self.tips} tips" if self.answered < self.tips else ""
        )
        return (
            f"judge {self.judge_model} is NOT calibrated: κ {kappas} on the calibration set"
            f"{answered}, below the threshold {self.min_kappa:.2f}; its scores are not evidence"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge_model": self.judge_model,
            "rubric": self.rubric_id,
            "calibrated": self.calibrated,
            "min_kappa": self.min_kappa,
            "kappa": None
            if self.kappas is None
            else {k: json_number(v) for k, v in self.kappas.items()},
            "answered": self.answered,
            "tips": self.tips,
            "run_id": self.run_id,
            "summary": self.describe(),
        }


def _kappa(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}"


def judge_calibration(
    store: TrackingStore,
    judge_model: str,
    rubric_id: str,
    calibration_hash: str | None,
    min_kappa: float = DEFAULT_MIN_KAPPA,
) -> JudgeCalibration:
    """The latest calibration of `judge_model` on the rubric's calibration set.

    With `calibration_hash`, only a calibration on exactly that set counts.
    """
    empty = JudgeCalibration(judge_model, rubric_id, min_kappa)
    experiment_id = store.find_experiment(CALIBRATION_EXPERIMENT)
    if experiment_id is None:
        return empty
    # FINISHED: a calibration run still being written (its tags come first) is not read.
    tags = {KIND_TAG: KIND_CALIBRATION, JUDGE_MODEL_TAG: judge_model, RUBRIC_TAG: rubric_id}
    if calibration_hash is not None:
        tags[HASH_TAG] = calibration_hash
    runs = store.find(experiment_id, tags, status="FINISHED", limit=1)
    if not runs:
        return empty
    run = runs[0]
    metrics = run.metrics
    return JudgeCalibration(
        judge_model,
        rubric_id,
        min_kappa,
        kappas={name: metrics.get(_metric("kappa", name), math.nan) for name in SCORE_NAMES},
        answered=int(metrics.get("answered", 0)),
        tips=int(metrics.get("tips", 0)),
        run_id=run.run_id,
    )


def tier_calibration(
    store: TrackingStore,
    runs: Iterable[CellRun],
    suite: str | Path | None = None,
    min_kappa: float = DEFAULT_MIN_KAPPA,
) -> tuple[JudgeCalibration, ...]:
    """The calibration of every judge model whose automatic scores are on `runs`.

    The calibration set is the suite's (bundled by default) when its rubric is the runs';
    otherwise the latest calibration of the judge on that rubric counts.
    """
    judges: set[tuple[str, str]] = set()
    for run in runs:
        if run.judged_by("auto"):
            judges.add((run.judge_of("auto"), run.rubric))
    if not judges:
        return ()
    try:
        loaded = load_suite(suite)
    except SuiteError:
        loaded = None
    statuses = []
    for judge_model, rubric_id in sorted(judges):
        known = (
            loaded is not None and loaded.calibration is not None and loaded.rubric.id == rubric_id
        )
        digest = loaded.calibration.hash if known and loaded and loaded.calibration else None
        try:
            status = judge_calibration(store, judge_model, rubric_id, digest, min_kappa)
        except TipbenchError:
            status = JudgeCalibration(judge_model, rubric_id, min_kappa)
        statuses.append(status)
    return tuple(statuses)
