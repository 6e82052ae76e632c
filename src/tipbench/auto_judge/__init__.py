"""The automatic judge: an LLM scores every candidate against the rubric, and what its
scores are worth beside the people's.

What lives where:

- `auto_judge`, `AutoJudgeConfig` (`_judge`): the judging run, one judge model loaded once;
  its requests (`_requests`), the rubric prompt and the answer's schema (`_prompt`), the
  verdict written to each run (`_verdict`), the rules' flags over its own (`_flags`);
- `calibrate`, `Calibration` (`_calibration`), `log_calibration`, `tier_calibration`
  (`_calibration_store`): the judge scored on the suite's calibration set, kept in MLflow
  and looked up wherever its scores are evidence;
- `agreement` and its notes (`_agreement`, `_agreement_notes`), `tier_agreement`,
  `export_disagreements` (`_tiers`): agreement with the human tier, and the candidates the
  tiers disagree on, handed to a person through the human tier's file;
- `scorer`, `RubricScorer` (`_scorer`): the same judge as an MLflow GenAI scorer, imported
  on first use (MLflow's GenAI package takes seconds to import).

The candidates it reads and the scores it writes are `tipbench.tracking`'s layout of a cell
run; the people's side is `tipbench.human_tier`.
"""

from typing import TYPE_CHECKING, Any

from tipbench.auto_judge._agreement import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)
from tipbench.auto_judge._agreement_notes import FIGURE_SCALES, constant_side_note
from tipbench.auto_judge._calibration import (
    DEFAULT_MIN_KAPPA,
    FLAGS_NOTE,
    Calibration,
    CriterionFigures,
    calibrate,
    calibration_figures,
)
from tipbench.auto_judge._calibration_store import (
    CALIBRATION_EXPERIMENT,
    JudgeCalibration,
    judge_calibration,
    log_calibration,
    tier_calibration,
)
from tipbench.auto_judge._flags import constant_score_warnings, judge_flags, with_rule_flags
from tipbench.auto_judge._judge import (
    DEFAULT_JUDGE_MODEL,
    AutoJudgeConfig,
    AutoJudgeProgress,
    AutoJudgeResult,
    auto_judge,
)
from tipbench.auto_judge._prompt import judge_messages, parse_scores, score_schema
from tipbench.auto_judge._tiers import (
    ScoredPair,
    agreement_notes,
    export_disagreements,
    scored_pairs,
    tier_agreement,
)

__all__ = [
    "CALIBRATION_EXPERIMENT",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_MIN_KAPPA",
    "FIGURE_SCALES",
    "FLAGS_NOTE",
    "Agreement",
    "AutoJudgeConfig",
    "AutoJudgeProgress",
    "AutoJudgeResult",
    "Calibration",
    "CriterionFigures",
    "JudgeCalibration",
    "RubricScorer",
    "ScoredPair",
    "agreement",
    "agreement_notes",
    "auto_judge",
    "calibrate",
    "calibration_figures",
    "constant_score_warnings",
    "constant_side_note",
    "export_disagreements",
    "judge_calibration",
    "judge_flags",
    "judge_messages",
    "krippendorff_alpha_ordinal",
    "log_calibration",
    "parse_scores",
    "quadratic_weighted_kappa",
    "score_schema",
    "scored_pairs",
    "scorer",
    "tier_agreement",
    "tier_calibration",
    "with_rule_flags",
]

if TYPE_CHECKING:
    from tipbench.auto_judge._scorer import RubricScorer, scorer

_LAZY = ("RubricScorer", "scorer")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tipbench.auto_judge import _scorer

        return getattr(_scorer, name)
    raise AttributeError(f"module 'tipbench.auto_judge' has no attribute {name!r}")
