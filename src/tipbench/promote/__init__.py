"""Promote: the winning prompt goes to production only when both tiers and the stats agree."""

from tipbench.promote._gate import DEFAULT_MARGIN_POINTS, Decision, decide
from tipbench.promote._online import (
    DEFAULT_ONLINE_MARGIN,
    NOT_WORSE_ONLINE,
    OnlineComparison,
    OnlineEvidence,
    online_condition,
    with_online,
)
from tipbench.promote._promote import KIND_PROMOTION, PromotionResult, promote
from tipbench.promote._registry import (
    PRODUCTION_ALIAS,
    ProductionPrompt,
    production_prompt,
    promote_prompt,
)
from tipbench.tracking import DEFAULT_PROMPT_NAME, registry_template

__all__ = [
    "DEFAULT_MARGIN_POINTS",
    "DEFAULT_ONLINE_MARGIN",
    "DEFAULT_PROMPT_NAME",
    "KIND_PROMOTION",
    "NOT_WORSE_ONLINE",
    "PRODUCTION_ALIAS",
    "Decision",
    "OnlineComparison",
    "OnlineEvidence",
    "ProductionPrompt",
    "PromotionResult",
    "decide",
    "online_condition",
    "production_prompt",
    "promote",
    "promote_prompt",
    "registry_template",
    "with_online",
]
