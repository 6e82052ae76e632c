"""The policy gate (`tipbench policy promote`): a challenger replaces the live tip-serving
policy only when the simulator finds it better (paired, by a margin, p < 0.05) and the served
traffic rules out a loss of δ off-policy (no estimate, no pass: a log without one is "not
enough traffic"); the switch happens in the serving state and the decision is recorded in
MLflow with its evidence.

Where the gate stands (the admin server's Policies page, the DAG's dry run): the serving
roles and counts (`serving_summary`), the state's log evaluated off-policy (`evaluate_state`),
the latest recorded simulation (`latest_simulation`) and the decision each simulated
challenger would get now (`dry_runs`).
"""

from tipbench.policy_gate._gate import (
    DEFAULT_MARGIN_REWARD,
    OFF_POLICY_MARGIN_REWARD,
    POWER,
    PromotionDecision,
    decide_promotion,
    decisions_needed,
    more_decisions,
)
from tipbench.policy_gate._promote import (
    KIND_PROMOTION,
    PromotionResult,
    promote_policy,
    serving_config,
    switch_roles,
)
from tipbench.policy_gate._status import (
    RecordedSimulation,
    dry_runs,
    evaluate_state,
    latest_simulation,
    log_size,
    serving_summary,
    simulation_plot,
)

__all__ = [
    "DEFAULT_MARGIN_REWARD",
    "KIND_PROMOTION",
    "OFF_POLICY_MARGIN_REWARD",
    "POWER",
    "PromotionDecision",
    "PromotionResult",
    "RecordedSimulation",
    "decide_promotion",
    "decisions_needed",
    "dry_runs",
    "evaluate_state",
    "latest_simulation",
    "log_size",
    "more_decisions",
    "promote_policy",
    "serving_config",
    "serving_summary",
    "simulation_plot",
    "switch_roles",
]
