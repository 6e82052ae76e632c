"""Judge (phase B): the human and automatic tiers and the agreement between them."""

from tipbench.judge._agreement import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)
from tipbench.judge._file import SCHEMA_VERSION, JudgeFile, json_schema, read_judge_file
from tipbench.judge._human import (
    ApplyResult,
    ExportResult,
    apply_judge_file,
    default_judge,
    export_pending,
)
from tipbench.judge._scores import TIERS, Scores, Tier, decode_scores, metric_name
from tipbench.judge._tiers import ScoredPair, export_disagreements, scored_pairs, tier_agreement

__all__ = [
    "SCHEMA_VERSION",
    "TIERS",
    "Agreement",
    "ApplyResult",
    "ExportResult",
    "JudgeFile",
    "ScoredPair",
    "Scores",
    "Tier",
    "agreement",
    "apply_judge_file",
    "decode_scores",
    "default_judge",
    "export_disagreements",
    "export_pending",
    "json_schema",
    "krippendorff_alpha_ordinal",
    "metric_name",
    "quadratic_weighted_kappa",
    "read_judge_file",
    "scored_pairs",
    "tier_agreement",
]
