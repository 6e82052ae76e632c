"""Judge (phase B): the human and automatic tiers and the agreement between them.

`scorer` (the rubric judge as an MLflow GenAI scorer) is imported on first use: MLflow's
GenAI package takes seconds to import.
"""

from typing import TYPE_CHECKING, Any

from tipbench.judge._agreement import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)
from tipbench.judge._agreement_notes import FIGURE_SCALES, constant_side_note
from tipbench.judge._auto import (
    DEFAULT_JUDGE_MODEL,
    AutoJudgeConfig,
    AutoJudgeProgress,
    AutoJudgeResult,
    auto_judge,
)
from tipbench.judge._auto_flags import constant_score_warnings, judge_flags, with_rule_flags
from tipbench.judge._auto_prompt import judge_messages, parse_scores, score_schema
from tipbench.judge._calibration import (
    DEFAULT_MIN_KAPPA,
    FLAGS_NOTE,
    Calibration,
    CriterionFigures,
    calibrate,
    calibration_figures,
)
from tipbench.judge._calibration_store import (
    CALIBRATION_EXPERIMENT,
    JudgeCalibration,
    judge_calibration,
    log_calibration,
    tier_calibration,
)
from tipbench.judge._candidates import CellCandidates, fetch_candidates
from tipbench.judge._carry import fresh_path
from tipbench.judge._export import (
    ExportResult,
    blind_order,
    experiment_seed,
    export_pending,
    item_numbers,
    judge_file_for,
    new_export_id,
    previous_judge_file,
)
from tipbench.judge._file import (
    SCHEMA_VERSION,
    Item,
    JudgeFile,
    JudgeFileError,
    RubricRef,
    json_schema,
)
from tipbench.judge._human import (
    ApplyResult,
    PendingRun,
    apply_judge_file,
    apply_judgements,
    default_judge,
)
from tipbench.judge._mlflow_feedback import (
    HUMAN_JUDGES_VARIABLE,
    SOURCE_MLFLOW,
    FeedbackApplyResult,
    apply_mlflow_feedback,
    feedback_drafts,
    parse_humans,
    require_humans,
)
from tipbench.judge._record import record_draft, record_scores
from tipbench.judge._tiers import (
    ScoredPair,
    agreement_notes,
    export_disagreements,
    scored_pairs,
    tier_agreement,
)
from tipbench.judge._versions import StaleRun, changed_since
from tipbench.tracking import TIERS, Scores, Tier, decode_scores, metric_name

__all__ = [
    "CALIBRATION_EXPERIMENT",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_MIN_KAPPA",
    "FIGURE_SCALES",
    "FLAGS_NOTE",
    "HUMAN_JUDGES_VARIABLE",
    "SCHEMA_VERSION",
    "SOURCE_MLFLOW",
    "TIERS",
    "Agreement",
    "ApplyResult",
    "AutoJudgeConfig",
    "AutoJudgeProgress",
    "AutoJudgeResult",
    "Calibration",
    "CellCandidates",
    "CriterionFigures",
    "ExportResult",
    "FeedbackApplyResult",
    "Item",
    "JudgeCalibration",
    "JudgeFile",
    "JudgeFileError",
    "PendingRun",
    "RubricRef",
    "RubricScorer",
    "ScoredPair",
    "Scores",
    "StaleRun",
    "Tier",
    "agreement",
    "agreement_notes",
    "apply_judge_file",
    "apply_judgements",
    "apply_mlflow_feedback",
    "auto_judge",
    "blind_order",
    "calibrate",
    "calibration_figures",
    "changed_since",
    "constant_score_warnings",
    "constant_side_note",
    "decode_scores",
    "default_judge",
    "experiment_seed",
    "export_disagreements",
    "export_pending",
    "feedback_drafts",
    "fetch_candidates",
    "fresh_path",
    "item_numbers",
    "json_schema",
    "judge_calibration",
    "judge_file_for",
    "judge_flags",
    "judge_messages",
    "krippendorff_alpha_ordinal",
    "log_calibration",
    "metric_name",
    "new_export_id",
    "parse_humans",
    "parse_scores",
    "previous_judge_file",
    "quadratic_weighted_kappa",
    "record_draft",
    "record_scores",
    "require_humans",
    "score_schema",
    "scored_pairs",
    "scorer",
    "tier_agreement",
    "tier_calibration",
    "with_rule_flags",
]

if TYPE_CHECKING:
    from tipbench.judge._scorer import RubricScorer, scorer

_LAZY = ("RubricScorer", "scorer")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tipbench.judge import _scorer

        return getattr(_scorer, name)
    raise AttributeError(f"module 'tipbench.judge' has no attribute {name!r}")
