"""Judge (phase B): the human and automatic tiers and the agreement between them."""

from tipbench.judge._agreement import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)
from tipbench.judge._auto import (
    DEFAULT_JUDGE_MODEL,
    AutoJudgeProgress,
    AutoJudgeResult,
    auto_judge,
)
from tipbench.judge._auto_prompt import judge_messages, parse_scores, score_schema
from tipbench.judge._file import SCHEMA_VERSION, JudgeFile, json_schema, read_judge_file
from tipbench.judge._human import (
    ApplyResult,
    ExportResult,
    apply_judge_file,
    apply_judgements,
    default_judge,
    export_pending,
)
from tipbench.judge._scores import TIERS, Scores, Tier, decode_scores, metric_name
from tipbench.judge._tiers import ScoredPair, export_disagreements, scored_pairs, tier_agreement

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "SCHEMA_VERSION",
    "TIERS",
    "Agreement",
    "ApplyResult",
    "AutoJudgeProgress",
    "AutoJudgeResult",
    "ExportResult",
    "JudgeFile",
    "ScoredPair",
    "Scores",
    "Tier",
    "agreement",
    "apply_judge_file",
    "apply_judgements",
    "auto_judge",
    "decode_scores",
    "default_judge",
    "export_disagreements",
    "export_pending",
    "json_schema",
    "judge_messages",
    "krippendorff_alpha_ordinal",
    "metric_name",
    "parse_scores",
    "quadratic_weighted_kappa",
    "read_judge_file",
    "score_schema",
    "scored_pairs",
    "tier_agreement",
]
