"""Calibrating an automatic judge: score the suite's calibration set, compare with agreement.

A judge model scores every tip of the suite's calibration set exactly as `judge auto`
scores candidates (same prompt, temperature 0, schema, retries). Per criterion and flag the
result holds the quadratic-weighted κ against the agreed scores, exact and within-1
agreement and the confusion matrix (rows: agreed score, columns: the judge's). A judge
counts as calibrated when the κ of each 1-5 criterion reaches the threshold and it answered
(nearly) every tip: one that cannot tell a 1 from a 5 on the rubric's own examples is not
evidence.

The flags are reported where the judge scores them, its own answers, for information only:
the automatic tier records the rules' flags (which the calibration set agrees with by
construction), and they never decide whether a judge is calibrated (`FLAGS_NOTE`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tipbench._errors import ConfigError
from tipbench._phase import PhaseConfig, SilentProgress
from tipbench.auto_judge._agreement import quadratic_weighted_kappa
from tipbench.auto_judge._agreement_notes import FIGURE_SCALES, Side, constant_side_note
from tipbench.auto_judge._judge import AutoJudgeProgress, CandidateJudge, judge_options
from tipbench.auto_judge._verdict import RawAnswer
from tipbench.backends import (
    Backend,
    ModelSpec,
    RetryPolicy,
    checked,
    open_backend,
    resident,
)
from tipbench.stats import json_number
from tipbench.suite import (
    CRITERIA,
    FLAGS,
    SCORE_NAMES,
    CalibrationSet,
    Suite,
    levels,
    load_suite,
)
from tipbench.tracking import CellCandidates, RecordedCandidate, Scores

#: The κ every 1-5 criterion needs for the automatic tier to count (substantial agreement).
DEFAULT_MIN_KAPPA = 0.6
#: Share of the calibration tips a judge must answer with valid scores.
MIN_ANSWERED = 0.9
FLAGS_NOTE = (
    "format_ok and overlong are the judge's own answers, for information, where it gives them "
    "(under the score schema its answer ends after the criteria: none): the automatic tier "
    "records the rules' flags (only a human overrides them), and they do not count for "
    "calibration"
)


def labels_of(name: str) -> tuple[int, ...]:
    """The valid scores of a criterion or flag, in ordinal order (the rubric's)."""
    return levels(name)


@dataclass(frozen=True)
class CriterionFigures:
    """How a judge's scores of one criterion (or flag) agree with the agreed scores."""

    name: str
    n: int
    kappa: float
    exact: float
    within_1: float
    labels: tuple[int, ...]
    confusion: tuple[tuple[int, ...], ...]  # [agreed][judged], in `labels` order

    def sides(self) -> tuple[list[int], list[int]]:
        """The agreed and the judged scores as counted in `confusion` (in label order)."""
        agreed = [
            label
            for label, row in zip(self.labels, self.confusion, strict=True)
            for _ in range(sum(row))
        ]
        judged = [
            label
            for j, label in enumerate(self.labels)
            for _ in range(sum(row[j] for row in self.confusion))
        ]
        return agreed, judged

    def note(self) -> str | None:
        """Why κ and exact agreement disagree, when a side gave every tip the same score."""
        agreed, judged = self.sides()
        sides = Side("the agreed scores", agreed), Side("the judge", judged)
        return constant_side_note(self.name, *sides, self.kappa, self.exact, items="tip")

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kappa": json_number(self.kappa),
            "exact": json_number(self.exact),
            "within_1": json_number(self.within_1),
            "labels": list(self.labels),
            "confusion": [list(row) for row in self.confusion],
        }


def calibration_figures(
    agreed: Sequence[Scores], judged: Sequence[Scores]
) -> dict[str, CriterionFigures]:
    """Per criterion and flag: κ (quadratic weights), exact, within-1 and the confusion.

    Args:
        agreed: The agreed scores of the tips the judge answered.
        judged: The judge's scores of the same tips, in the same order.
    """
    figures = {}
    for name in SCORE_NAMES:
        labels = labels_of(name)
        a = [getattr(s, name) for s in agreed]
        j = [getattr(s, name) for s in judged]
        n = len(a)
        confusion = [[0] * len(labels) for _ in labels]
        for x, y in zip(a, j, strict=True):
            confusion[labels.index(x)][labels.index(y)] += 1
        figures[name] = CriterionFigures(
            name=name,
            n=n,
            kappa=quadratic_weighted_kappa(a, j, labels),
            exact=sum(x == y for x, y in zip(a, j, strict=True)) / n if n else math.nan,
            within_1=sum(abs(x - y) <= 1 for x, y in zip(a, j, strict=True)) / n if n else math.nan,
            labels=labels,
            confusion=tuple(tuple(row) for row in confusion),
        )
    return figures


@dataclass(frozen=True)
class Calibration:
    """One calibration of a judge model on a suite's calibration set."""

    judge_model: str
    rubric_id: str
    calibration_hash: str
    tips: int
    answered: int
    figures: Mapping[str, CriterionFigures]
    failed: tuple[tuple[str, str], ...] = ()  # (tip id, error)
    answers: Mapping[str, tuple[RawAnswer, ...]] = field(default_factory=dict, repr=False)
    judged: Mapping[str, Scores] = field(default_factory=dict, repr=False)

    def kappas(self) -> dict[str, float]:
        return {name: self.figures[name].kappa for name in SCORE_NAMES}

    def passes(self, min_kappa: float = DEFAULT_MIN_KAPPA) -> bool:
        return passes(self.kappas(), self.answered, self.tips, min_kappa)

    def notes(self) -> list[str]:
        """Per counted criterion, why κ reads as it does where a side is constant."""
        return [note for name in CRITERIA if (note := self.figures[name].note()) is not None]

    def to_dict(self, min_kappa: float = DEFAULT_MIN_KAPPA) -> dict[str, Any]:
        return {
            "judge_model": self.judge_model,
            "rubric": self.rubric_id,
            "calibration_hash": self.calibration_hash,
            "tips": self.tips,
            "answered": self.answered,
            "min_kappa": min_kappa,
            "calibrated": self.passes(min_kappa),
            "criteria": {name: f.to_dict() for name, f in self.figures.items()},
            "counted": list(CRITERIA),
            "scale": {"scores": {n: list(levels(n)) for n in SCORE_NAMES}, **FIGURE_SCALES},
            "notes": self.notes(),
            "flags_note": FLAGS_NOTE,
            "failed": [{"tip": tip, "error": error} for tip, error in self.failed],
        }


def passes(kappas: Mapping[str, float], answered: int, tips: int, min_kappa: float) -> bool:
    """Each 1-5 criterion's κ reaches `min_kappa`, and nearly every tip was answered."""
    if tips == 0 or answered < MIN_ANSWERED * tips:
        return False
    return all(not math.isnan(kappas[name]) and kappas[name] >= min_kappa for name in CRITERIA)


def calibrate(
    judge_model: str,
    config: PhaseConfig | None = None,
    *,
    retry: RetryPolicy | None = None,
    progress: AutoJudgeProgress | None = None,
    backend: Backend | None = None,
) -> Calibration:
    """Score the suite's calibration set with `judge_model`; compare with the agreed scores.

    Args:
        judge_model: A model spec; the size guard applies as for `judge auto`.
        config: The suite whose calibration set and rubric to use, the size guard and the
            backends' servers, as for `judge auto` [default: the bundled suite, servers from
            the environment]. Its experiment is not used: calibrations have their own.
        retry: Retries of transient failures and unparsable answers, per tip.
        progress: Receives progress per tip.
        backend: The judge's backend, already made (tests); opened from the spec otherwise.

    Raises:
        ConfigError: the suite has no calibration set.
        BackendError: the judge model was refused or could not be loaded.
    """
    config = config or PhaseConfig()
    loaded = load_suite(config.suite)
    calibration_set = loaded.calibration
    if calibration_set is None:
        raise ConfigError(
            f"suite {loaded.label} has no calibration set (calibration.yaml in {loaded.path})"
        )
    spec = ModelSpec.parse(judge_model)
    backend = checked(
        backend or open_backend(spec, judge_options(config.backend_options())),
        config.max_model_b,
        config.allow_unknown_size,
    ).backend
    progress = progress or SilentProgress()
    retry = retry or RetryPolicy()
    judge = CandidateJudge(backend, loaded.rubric.text(), retry, progress)
    cells = _cells(loaded, calibration_set)
    progress.begin(len(cells), 0)
    judged: dict[str, Scores] = {}
    own_flags: dict[str, tuple[int, int]] = {}
    answers: dict[str, tuple[RawAnswer, ...]] = {}
    failed: list[tuple[str, str]] = []
    progress.loading(str(spec), True)
    with resident(backend, retry, progress.note):
        judge.warm()
        progress.loading(str(spec), False)
        for cell in cells:
            tip_id = cell.run_id
            verdict = judge.cell(tip_id, cell)
            answers[tip_id] = tuple(verdict.answers.get(tip_id, ()))
            if verdict.error is not None:
                failed.append((tip_id, verdict.error))
            else:
                judged[tip_id] = verdict.scores[tip_id]
                own_flags.update(verdict.own_flags)
    agreed = {tip.id: Scores(**tip.scores) for tip in calibration_set.tips}
    order = [tip.id for tip in calibration_set.tips if tip.id in judged]
    return Calibration(
        judge_model=str(spec),
        rubric_id=calibration_set.rubric_id,
        calibration_hash=calibration_set.hash,
        tips=len(calibration_set.tips),
        answered=len(judged),
        figures=_figures(order, agreed, judged, own_flags),
        failed=tuple(failed),
        answers=answers,
        judged=judged,
    )


def _figures(
    order: list[str],
    agreed: Mapping[str, Scores],
    judged: Mapping[str, Scores],
    own_flags: Mapping[str, tuple[int, int]],
) -> dict[str, CriterionFigures]:
    """The criteria over every tip answered; the flags over the tips whose judge gave its
    own (under the score schema it gives none: its answer ends after the criteria)."""
    figures = calibration_figures([agreed[t] for t in order], [judged[t] for t in order])
    flagged = [t for t in order if t in own_flags]
    own = [replace(judged[t], format_ok=own_flags[t][0], overlong=own_flags[t][1]) for t in flagged]
    flag_figures = calibration_figures([agreed[t] for t in flagged], own)
    return figures | {name: flag_figures[name] for name in FLAGS}


def _cells(suite: Suite, calibration_set: CalibrationSet) -> list[CellCandidates]:
    """Each tip as a one-candidate cell, so the judge sees it exactly like a candidate."""
    rubric = suite.rubric
    return [
        CellCandidates(
            run_id=tip.id,
            model="",
            prompt_version="",
            scenario=tip.scenario.context(),
            candidates=(
                RecordedCandidate(
                    id=tip.id,
                    text=tip.text,
                    format_ok=rubric.format_ok(tip.text),
                    overlong=rubric.overlong(tip.text),
                ),
            ),
        )
        for tip in calibration_set.tips
    ]
