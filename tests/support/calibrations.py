"""Small fake judges for calibration: one that echoes the agreed scores, one that answers
a constant. They stand in for a model behind the backend interface, so `calibrate` runs
its real prompt, parsing, figures and MLflow record (the real model is tested in
tests/auto_judge/test_calibration.py)."""

from __future__ import annotations

import json
from typing import Literal

from tipbench.auto_judge import Calibration, calibrate, log_calibration
from tipbench.backends import (
    Backend,
    BackendOptions,
    Generation,
    GenerationRequest,
    ModelInfo,
    ModelSpec,
)
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

Answers = Literal["echo", "constant"]
CONSTANT = {"relevance": 1, "actionability": 1, "tone": 1, "format_ok": 0, "overlong": 0}


class FakeJudge(Backend):
    """Answers each calibration tip with its agreed scores, or always with `CONSTANT`."""

    def __init__(self, spec: str, answers: Answers) -> None:
        super().__init__(ModelSpec.parse(spec), BackendOptions())
        self.answers = answers
        calibration = load_suite().calibration
        assert calibration is not None
        self.agreed = {tip.text: dict(tip.scores) for tip in calibration.tips}
        self.requests = 0
        self.loaded = False

    def describe(self) -> ModelInfo:
        return ModelInfo(parameter_count=135_000_000, identity="fake")

    def load(self) -> None:
        self.loaded = True

    def unload(self) -> None:
        self.loaded = False

    def generate(self, request: GenerationRequest) -> Generation:
        assert self.loaded and request.json_schema is not None and request.temperature == 0
        self.requests += 1
        user = request.messages[-1][1]
        tip = user.split("# Candidate tip\n\n", 1)[1].split("\n\n# Flags from the rules", 1)[0]
        scores = self.agreed[tip] if self.answers == "echo" else CONSTANT
        return Generation(json.dumps(scores), 100, 20, structured=True)


def calibrate_fake(judge_model: str, answers: Answers) -> Calibration:
    return calibrate(judge_model, backend=FakeJudge(judge_model, answers))


def log_fake_calibration(uri: str, judge_model: str, answers: Answers = "echo") -> str:
    """Calibrate a fake judge under `judge_model`'s name and log it to the store."""
    return log_calibration(TrackingStore(uri), calibrate_fake(judge_model, answers))
