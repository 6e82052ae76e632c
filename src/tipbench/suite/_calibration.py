"""A suite's calibration set: tips with agreed scores that an automatic judge must match.

`calibration.yaml` in a suite folder (optional for user suites; the bundled suite has one)
names its rubric and lists tips, each written for one of the suite's scenarios, with the
scores judges agreed on for every criterion and flag. It is validated at load time: at
least `MIN_CALIBRATION_TIPS` tips, unique ids and tips, known scenarios, flags that agree
with the rubric's rules, and the rubric's calibrated examples among the tips with their
level as the agreed score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from tipbench._errors import SuiteError
from tipbench.suite._files import Identifier, Text, _Strict, read_model
from tipbench.suite._rubric import Rubric
from tipbench.suite._scenario import Scenario, content_hash

CALIBRATION_FILE = "calibration.yaml"
MIN_CALIBRATION_TIPS = 30

_Level = Annotated[int, Field(ge=1, le=5)]
_Flag = Annotated[int, Field(ge=0, le=1)]


class AgreedScoresFile(_Strict):
    relevance: _Level
    actionability: _Level
    tone: _Level
    format_ok: _Flag
    overlong: _Flag


class CalibrationTipFile(_Strict):
    id: Identifier
    scenario: Identifier
    tip: Text
    scores: AgreedScoresFile


class CalibrationFile(_Strict):
    """`calibration.yaml`: the rubric it calibrates, and the tips with agreed scores."""

    rubric: Identifier
    tips: list[CalibrationTipFile]


@dataclass(frozen=True)
class CalibrationTip:
    """One tip of the calibration set with the scores judges agreed on."""

    id: str
    scenario: Scenario
    text: str
    scores: Mapping[str, int]  # every name of SCORE_NAMES


@dataclass(frozen=True)
class CalibrationSet:
    """The tips an automatic judge is calibrated on, for one rubric."""

    rubric_id: str
    tips: tuple[CalibrationTip, ...]

    @property
    def hash(self) -> str:
        """Changes with any tip, scenario or agreed score: calibrations are keyed by it."""
        return content_hash(
            [
                self.rubric_id,
                [[t.id, t.scenario.content_hash, t.text, dict(t.scores)] for t in self.tips],
            ]
        )


def load_calibration(file: Path, rubric: Rubric, scenarios: tuple[Scenario, ...]) -> CalibrationSet:
    """Load and validate a suite's calibration set.

    Raises:
        SuiteError: naming the file and the problem.
    """
    data = read_model(file, CalibrationFile)
    if data.rubric != rubric.id:
        raise SuiteError(f"{file}: rubric {data.rubric!r} is not the suite's {rubric.id!r}")
    if len(data.tips) < MIN_CALIBRATION_TIPS:
        raise SuiteError(
            f"{file}: {len(data.tips)} tips; a calibration set needs at least "
            f"{MIN_CALIBRATION_TIPS}"
        )
    by_id = {s.id: s for s in scenarios}
    seen_ids: set[str] = set()
    seen_tips: set[tuple[str, str]] = set()
    tips = []
    for index, entry in enumerate(data.tips):
        where = f"{file}: tips[{index}] ({entry.id})"
        if entry.id in seen_ids:
            raise SuiteError(f"{where}: duplicate tip id")
        if (entry.scenario, entry.tip) in seen_tips:
            raise SuiteError(f"{where}: the same tip for the same scenario is listed twice")
        seen_ids.add(entry.id)
        seen_tips.add((entry.scenario, entry.tip))
        scenario = by_id.get(entry.scenario)
        if scenario is None:
            raise SuiteError(f"{where}: unknown scenario {entry.scenario!r}")
        scores = entry.scores.model_dump()
        for flag, rule in (("format_ok", rubric.format_ok), ("overlong", rubric.overlong)):
            if scores[flag] != rule(entry.tip):
                raise SuiteError(
                    f"{where}: {flag} {scores[flag]} disagrees with the rubric's rule "
                    f"({rule(entry.tip)})"
                )
        tips.append(CalibrationTip(entry.id, scenario, entry.tip, scores))
    _check_rubric_examples(file, rubric, tips)
    return CalibrationSet(rubric.id, tuple(tips))


def _check_rubric_examples(file: Path, rubric: Rubric, tips: list[CalibrationTip]) -> None:
    """Every calibrated example of the rubric is in the set, with its level as its score."""
    agreed = {(t.scenario.id, " ".join(t.text.split())): t for t in tips}
    for criterion in rubric.criteria:
        for level in criterion.levels:
            key = (level.example_scenario, " ".join(level.example_tip.split()))
            tip = agreed.get(key)
            if tip is None:
                raise SuiteError(
                    f"{file}: the rubric's {criterion.name} level {level.score} example "
                    f"({level.example_scenario}) is not in the calibration set"
                )
            if tip.scores[criterion.name] != level.score:
                raise SuiteError(
                    f"{file}: tip {tip.id}: {criterion.name} {tip.scores[criterion.name]}, "
                    f"but the rubric's example of level {level.score}"
                )
