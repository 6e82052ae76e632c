"""Off-policy evaluation (`tipbench policy evaluate`): from a decision log, IPS, SNIPS and
doubly-robust estimates of what another policy would have earned, with 95% intervals, the
effective sample size and the share of clipped weights.

    read_log(FILE) | decision_rows(store) ─▶ traffic_chunks() ─▶ Traffic, … ─▶ evaluate()
                     (check_row: every row; each decision id once)     (sums, then figures)
    render_evaluation(report) ─▶ lines;  log_evaluation(store, experiment, report, source)

The log is read once, a chunk at a time: memory does not grow with its length but for 16
bytes a decision id. `traffic_from_rows` reads a small log as one `Traffic`. The MLflow
recording (`log_evaluation`) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tipbench._lazy import lazy_exports
from tipbench.evaluate._checks import PROBABILITY_TOLERANCE, LogRowError, check_row
from tipbench.evaluate._estimators import (
    BIASED_CLIP_SHARE,
    CLIP_WEIGHT,
    ESTIMATORS,
    MIN_DECISIONS,
    MIN_ESS,
    PolicyEvaluation,
    Status,
)
from tipbench.evaluate._evaluate import Comparison, EvaluationReport, Observed, evaluate
from tipbench.evaluate._log_file import LogFile, read_log
from tipbench.evaluate._render import render_evaluation
from tipbench.evaluate._replay import replay
from tipbench.evaluate._traffic import CHUNK_DECISIONS, Traffic, traffic_chunks, traffic_from_rows

if TYPE_CHECKING:
    from tipbench.evaluate._tracking import log_evaluation
else:
    __getattr__ = lazy_exports(__name__, {"log_evaluation": "_tracking"})

__all__ = [
    "BIASED_CLIP_SHARE",
    "CHUNK_DECISIONS",
    "CLIP_WEIGHT",
    "ESTIMATORS",
    "MIN_DECISIONS",
    "MIN_ESS",
    "PROBABILITY_TOLERANCE",
    "Comparison",
    "EvaluationReport",
    "LogFile",
    "LogRowError",
    "Observed",
    "PolicyEvaluation",
    "Status",
    "Traffic",
    "check_row",
    "evaluate",
    "log_evaluation",
    "read_log",
    "render_evaluation",
    "replay",
    "traffic_chunks",
    "traffic_from_rows",
]
