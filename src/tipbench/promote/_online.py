"""The online condition of `promote`: the candidate's tips do not fare worse with users than
production's.

Optional, and read as data: the caller (the CLI, Airflow's `bench_judged`, the admin panel)
passes `OnlineEvidence`, a function that answers, for the candidate's source and
production's (`model|prompt_version`, a leaderboard row's name), what the decision log of the
policy service says of their difference (an `OnlineComparison`, computed by
`tipbench.online`); promote never reads the log itself.

The condition is non-inferiority, as the policy gate's off-policy one (Chow & Liu, *Design
and Analysis of Clinical Trials*, ch. 3): the 95% interval of candidate − production, the
value of serving each one's tips paired by decision, must have its lower bound above
−`margin` (reward per decision, rewards in [0, 1]). An interval that still holds −margin
refuses and asks for more traffic; one wholly below refuses as worse. Where the log has no
estimate for both (no traffic for one of them, too little, or nothing in production), the
condition says so and passes: the gate decides as it does without online evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tipbench.promote._gate import Decision
from tipbench.stats import CONFIDENCE, Condition, Estimate

DEFAULT_ONLINE_MARGIN = 0.01
"""δ: the loss of reward per decision (rewards in [0, 1]) the served traffic must rule out."""
NOT_WORSE_ONLINE = "not worse online"


@dataclass(frozen=True)
class OnlineComparison:
    """What the decision log says of the candidate's tips against production's.

    Attributes:
        candidate: The candidate's source, `model|prompt_version`.
        production: Production's source on the same model.
        difference: Candidate − production, paired by decision (None: no estimate).
        decisions: The rewarded decisions the difference rests on.
        reason: Why there is no estimate (no traffic for one of them, too little).
    """

    candidate: str
    production: str
    difference: Estimate | None
    decisions: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "production": self.production,
            "decisions": self.decisions,
            "difference": None if self.difference is None else self.difference.to_dict(),
            "reason": self.reason,
        }


OnlineEvidence = Callable[[str, str], OnlineComparison]
"""(candidate source, production source) → what the decision log says of them."""


def online_condition(comparison: OnlineComparison, margin: float) -> Condition:
    """Non-inferiority by `margin` on the served traffic (see the module)."""
    d = comparison.difference
    if d is None or not d.has_interval:
        why = comparison.reason or "no estimate"
        return Condition(
            NOT_WORSE_ONLINE,
            True,
            f"no online evidence for both {comparison.candidate} and {comparison.production} "
            f"({why}): decided without it",
        )
    text = (
        f"{comparison.candidate} − {comparison.production} = {d.text(signed=True)} reward per "
        f"decision ({CONFIDENCE:.0%}, {comparison.decisions:,} decisions offering both); "
        f"margin {margin:g}"
    )
    if d.low > -margin:
        return Condition(NOT_WORSE_ONLINE, True, text)
    if d.high <= -margin:
        return Condition(NOT_WORSE_ONLINE, False, f"{text}: worse with users")
    return Condition(
        NOT_WORSE_ONLINE, False, f"{text}: the interval still holds −{margin:g}: more traffic"
    )


def with_online(
    decision: Decision, online: OnlineEvidence | None, margin: float = DEFAULT_ONLINE_MARGIN
) -> Decision:
    """The decision with the online condition added (unchanged without `online`, or without a
    candidate)."""
    if online is None or decision.model is None or decision.prompt_version is None:
        return decision
    candidate = f"{decision.model}|{decision.prompt_version}"
    if decision.production is None or decision.production == decision.prompt_version:
        what = "nothing is in production yet" if decision.production is None else "in production"
        check = Condition(NOT_WORSE_ONLINE, True, f"{what}: nothing to compare online")
        return replace(decision, conditions=(*decision.conditions, check))
    comparison = online(candidate, f"{decision.model}|{decision.production}")
    check = online_condition(comparison, margin)
    evidence = {**decision.evidence, "online": comparison.to_dict() | {"margin": margin}}
    return replace(decision, conditions=(*decision.conditions, check), evidence=evidence)
