"""Off-policy evaluation (`tipbench policy evaluate`): from a decision log, IPS, SNIPS and
doubly-robust estimates of what another policy would have earned, with 95% intervals, the
effective sample size and the share of clipped weights.

    read_log(FILE) | decision_rows(store) ─▶ traffic_from_rows() ─▶ Traffic ─▶ evaluate()
                                               (check_row: every row, first)
    render_evaluation(report) ─▶ lines;  log_evaluation(store, experiment, report, source)

The MLflow recording (`log_evaluation`) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tipbench._lazy import lazy_exports
from tipbench.evaluate._checks import PROBABILITY_TOLERANCE, LogRowError, check_row
from tipbench.evaluate._estimators import (
    CLIP_WEIGHT,
    ESTIMATORS,
    MIN_DECISIONS,
    MIN_ESS,
    PolicyEvaluation,
    Status,
    evaluate_policy,
    reward_model,
)
from tipbench.evaluate._evaluate import Comparison, EvaluationReport, Observed, evaluate
from tipbench.evaluate._render import render_evaluation
from tipbench.evaluate._replay import replay
from tipbench.evaluate._traffic import Traffic, read_log, traffic_from_rows

if TYPE_CHECKING:
    from tipbench.evaluate._tracking import log_evaluation
else:
    __getattr__ = lazy_exports(__name__, {"log_evaluation": "_tracking"})

__all__ = [
    "CLIP_WEIGHT",
    "ESTIMATORS",
    "MIN_DECISIONS",
    "MIN_ESS",
    "PROBABILITY_TOLERANCE",
    "Comparison",
    "EvaluationReport",
    "LogRowError",
    "Observed",
    "PolicyEvaluation",
    "Status",
    "Traffic",
    "check_row",
    "evaluate",
    "evaluate_policy",
    "log_evaluation",
    "read_log",
    "render_evaluation",
    "replay",
    "reward_model",
    "traffic_from_rows",
]
