"""The human tier: what people score, how, in which order, and when they may stop.

The judging page, `tipbench judge export`/`apply` and the API serve runs to a person
through this package; the combined leaderboard (`compare`) and the promotion gate
(`promote`) read the state it keeps. What lives where:

- `JudgeFile` (`_file`): the judge file a person fills in, in any editor;
- `export_pending` (`_export`), `export_rescores` (`_rescore`), what an export carries over
  (`_carry`) and whether a run's scores changed since (`_versions`): writing it, blind and
  shuffled, never destroying scores;
- `apply_judge_file`, `apply_judgements` (`_apply`): reading it (or the page's scores) back;
- `apply_mlflow_feedback`, `feedback_drafts` (`_mlflow_feedback`): scores given in MLflow's
  trace view, the other way in;
- `JudgingOrder`, `ensure_order`, `current_order` (`_order`): the record, in MLflow, that
  makes an experiment's human scores a sample with known inclusion probabilities;
- `queue_clocks`, `queue_inclusion`, `next_cells` (`_active`): each cell's queue (Rosén's
  order sampling) and which cell to serve next;
- `snapshot`, `next_units`, `Queues` (`_loop`): one step of the judging loop on arrays, the
  very calls the simulations of `tests/human_tier/test_simulations.py` drive;
- `CombinedState`, `combined_state`, `judging_state` (`_state`): an experiment's runs as
  that loop sees them;
- `judging_status`, `next_run`, `serving_order`, `plan` (`_status`): what the page says after
  each save, the run it serves, the order a judge file lists;
- `AnytimeLeader`, `anytime_leader`, `human_decision`, `cannot_decide` (`_anytime`): the
  leader as the confidence sequences see it, which the judging stops on and promotion rests
  on;
- `DetectableGap`, `detectable_gap` (`_detectable`): the smallest gap the gate can detect on
  an experiment's scenarios, said before anyone judges.

The statistics underneath are `tipbench.stats`'; the automatic tier is `tipbench.auto_judge`.
"""

from tipbench.human_tier._active import (
    inclusion_by_turn,
    next_cells,
    queue_clocks,
    queue_inclusion,
)
from tipbench.human_tier._anytime import (
    AnytimeLeader,
    anytime_leader,
    cannot_decide,
    human_decision,
)
from tipbench.human_tier._apply import (
    ApplyResult,
    PendingRun,
    apply_judge_file,
    apply_judgements,
    default_judge,
)
from tipbench.human_tier._carry import fresh_path
from tipbench.human_tier._detectable import ASSUMED_SPREAD, DetectableGap, detectable_gap
from tipbench.human_tier._export import (
    ExportResult,
    blind_order,
    experiment_seed,
    export_pending,
    item_numbers,
    judge_file_for,
    new_export_id,
    previous_judge_file,
)
from tipbench.human_tier._file import (
    SCHEMA_VERSION,
    Item,
    JudgeFile,
    JudgeFileError,
    RubricRef,
    json_schema,
)
from tipbench.human_tier._loop import Queues, Snapshot, next_units, snapshot
from tipbench.human_tier._mlflow_feedback import (
    HUMAN_JUDGES_VARIABLE,
    SOURCE_MLFLOW,
    FeedbackApplyResult,
    apply_mlflow_feedback,
    feedback_drafts,
    parse_humans,
    require_humans,
)
from tipbench.human_tier._order import (
    DEFAULT_ORDER,
    KIND_JUDGING_ORDER,
    ORDERS,
    JudgingOrder,
    Order,
    current_order,
    ensure_order,
    judge_uncertainty,
)
from tipbench.human_tier._rescore import Rescore, export_rescores
from tipbench.human_tier._state import CombinedState, combined_state, judging_state, score_floor
from tipbench.human_tier._status import (
    JudgingStatus,
    Plan,
    inclusion_at_turn,
    judging_status,
    next_run,
    plan,
    serving_order,
)
from tipbench.human_tier._versions import StaleRun, changed_since

__all__ = [
    "ASSUMED_SPREAD",
    "DEFAULT_ORDER",
    "HUMAN_JUDGES_VARIABLE",
    "KIND_JUDGING_ORDER",
    "ORDERS",
    "SCHEMA_VERSION",
    "SOURCE_MLFLOW",
    "AnytimeLeader",
    "ApplyResult",
    "CombinedState",
    "DetectableGap",
    "ExportResult",
    "FeedbackApplyResult",
    "Item",
    "JudgeFile",
    "JudgeFileError",
    "JudgingOrder",
    "JudgingStatus",
    "Order",
    "PendingRun",
    "Plan",
    "Queues",
    "Rescore",
    "RubricRef",
    "Snapshot",
    "StaleRun",
    "anytime_leader",
    "apply_judge_file",
    "apply_judgements",
    "apply_mlflow_feedback",
    "blind_order",
    "cannot_decide",
    "changed_since",
    "combined_state",
    "current_order",
    "default_judge",
    "detectable_gap",
    "ensure_order",
    "experiment_seed",
    "export_pending",
    "export_rescores",
    "feedback_drafts",
    "fresh_path",
    "human_decision",
    "inclusion_at_turn",
    "inclusion_by_turn",
    "item_numbers",
    "json_schema",
    "judge_file_for",
    "judge_uncertainty",
    "judging_state",
    "judging_status",
    "new_export_id",
    "next_cells",
    "next_run",
    "next_units",
    "parse_humans",
    "plan",
    "previous_judge_file",
    "queue_clocks",
    "queue_inclusion",
    "require_humans",
    "score_floor",
    "serving_order",
    "snapshot",
]
