"""The policy gate (`tipbench policy promote`): a challenger replaces the live tip-serving
policy only when the simulator finds it better (paired, by a margin, p < 0.05) and the served
traffic rules out a loss of δ off-policy (unless the log has no usable traffic); the switch
happens in the serving state and the decision is recorded in MLflow with its evidence."""

from tipbench.policy_gate._gate import (
    DEFAULT_MARGIN,
    OFF_POLICY_MARGIN,
    Condition,
    PromotionDecision,
    decide_promotion,
    more_decisions,
)
from tipbench.policy_gate._promote import (
    KIND_PROMOTION,
    PromotionResult,
    promote_policy,
    serving_config,
    switch_roles,
)

__all__ = [
    "DEFAULT_MARGIN",
    "KIND_PROMOTION",
    "OFF_POLICY_MARGIN",
    "Condition",
    "PromotionDecision",
    "PromotionResult",
    "decide_promotion",
    "more_decisions",
    "promote_policy",
    "serving_config",
    "switch_roles",
]
