"""Collect (phase A): run the (model × prompt × scenario) grid and record each cell."""

from tipbench._phase import DEFAULT_EXPERIMENT
from tipbench.collect._config import (
    BENCH_EXPERIMENT_PATTERN,
    DEFAULT_MODELS,
    DEFAULT_PROMPTS,
    CollectConfig,
)
from tipbench.collect._grid import Cell, plan_grid
from tipbench.collect._ledger import CollectProgress, CollectResult
from tipbench.collect._parse import (
    CUT_REST_MARK,
    REST_MARK,
    AnswerDone,
    ParsedTips,
    TipWords,
    parse_answer,
    parse_tips,
    tip_pattern,
    tips_schema,
)
from tipbench.collect._record import CellOutcome, build_record, build_trace
from tipbench.collect._runner import collect, preflight

__all__ = [
    "BENCH_EXPERIMENT_PATTERN",
    "CUT_REST_MARK",
    "DEFAULT_EXPERIMENT",
    "DEFAULT_MODELS",
    "DEFAULT_PROMPTS",
    "REST_MARK",
    "AnswerDone",
    "Cell",
    "CellOutcome",
    "CollectConfig",
    "CollectProgress",
    "CollectResult",
    "ParsedTips",
    "TipWords",
    "build_record",
    "build_trace",
    "collect",
    "parse_answer",
    "parse_tips",
    "plan_grid",
    "preflight",
    "tip_pattern",
    "tips_schema",
]
