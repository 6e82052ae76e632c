"""Judging: the human judging of an experiment, in the order that decides, and when to stop.

The judging page, `tipbench judge export` and the API serve runs to a human through this
package; the combined leaderboard (`compare`) and the promotion gate (`promote`) read the
state it keeps. What lives where:

- `JudgingOrder`, `ensure_order`, `current_order` (`_order`): the record, in MLflow, that
  makes an experiment's human scores a sample with known inclusion probabilities;
- `queue_clocks`, `queue_inclusion`, `next_cells` (`_active`): each cell's queue (Rosén's
  order sampling) and which cell to serve next;
- `snapshot`, `next_units`, `Queues` (`_loop`): one step of the judging loop on arrays, the
  very calls the simulations of `tests/judging/test_simulations.py` drive;
- `CombinedState`, `combined_state`, `judging_state` (`_state`): an experiment's runs as
  that loop sees them;
- `judging_status`, `next_run`, `serving_order`, `plan` (`_status`): what the page says after
  each save, the run it serves, the order a judge file lists;
- `AnytimeLeader`, `anytime_leader`, `human_decision`, `cannot_decide` (`_anytime`): the
  leader as the confidence sequences see it, which the judging stops on and promotion rests
  on;
- `DetectableGap`, `detectable_gap` (`_detectable`): the smallest gap the gate can detect on
  an experiment's scenarios, said before anyone judges.

The statistics underneath are `tipbench.stats`'.
"""

from tipbench.judging._active import (
    inclusion_by_turn,
    next_cells,
    queue_clocks,
    queue_inclusion,
)
from tipbench.judging._anytime import AnytimeLeader, anytime_leader, cannot_decide, human_decision
from tipbench.judging._detectable import ASSUMED_SPREAD, DetectableGap, detectable_gap
from tipbench.judging._loop import Queues, Snapshot, next_units, snapshot
from tipbench.judging._order import (
    DEFAULT_ORDER,
    KIND_JUDGING_ORDER,
    ORDERS,
    JudgingOrder,
    Order,
    current_order,
    ensure_order,
    judge_uncertainty,
)
from tipbench.judging._state import CombinedState, combined_state, judging_state, score_floor
from tipbench.judging._status import (
    JudgingStatus,
    Plan,
    inclusion_at_turn,
    judging_status,
    next_run,
    plan,
    serving_order,
)

__all__ = [
    "ASSUMED_SPREAD",
    "DEFAULT_ORDER",
    "KIND_JUDGING_ORDER",
    "ORDERS",
    "AnytimeLeader",
    "CombinedState",
    "DetectableGap",
    "JudgingOrder",
    "JudgingStatus",
    "Order",
    "Plan",
    "Queues",
    "Snapshot",
    "anytime_leader",
    "cannot_decide",
    "combined_state",
    "current_order",
    "detectable_gap",
    "ensure_order",
    "human_decision",
    "inclusion_at_turn",
    "inclusion_by_turn",
    "judge_uncertainty",
    "judging_state",
    "judging_status",
    "next_cells",
    "next_run",
    "next_units",
    "plan",
    "queue_clocks",
    "queue_inclusion",
    "score_floor",
    "serving_order",
    "snapshot",
]
