"""The promotion rule of a tip-serving policy: every condition with the figure that decided it.

A challenger replaces the live policy only if

1. it is not the live policy already;
2. it beats the live policy in the simulator: the mean per-seed reward difference (paired by
   seed, the same worlds for both) is at least `margin` and the sign-flip test gives
   p < `alpha`;
3. it is not worse than the live policy on the served traffic by more than δ
   (`off_policy_margin`, `OFF_POLICY_MARGIN_REWARD` by default): on the decisions the live policy
   made and the challenger scored, the doubly-robust terms minus the live policy's rewards
   have a 95% interval whose lower bound lies above −δ (non-inferiority; Chow & Liu, *Design
   and Analysis of Clinical Trials*, ch. 3: a one-sided 2.5% test of "worse by δ or more").
   An interval that still holds −δ refuses and says about how many more shadow decisions
   would settle it (the interval narrows as 1/√n); one wholly below −δ refuses as worse.
   Only a log with no usable traffic leaves the simulator to decide alone, and the condition
   says so: no rewarded decision at all, none with the challenger's probabilities (it never
   scored as a shadow and cannot be replayed), none of the live policy's that it scored, or
   its probability on tips the live policy never shows. Thin traffic (too few decisions, too
   small an effective sample) refuses, asking for more.

Without the margin ("not significantly worse": the interval's upper bound above 0) a
noisier, lower-overlap challenger passed more easily than a well-measured one; with it, a
wider interval is harder to pass, not easier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tipbench.evaluate import Comparison, EvaluationReport, PolicyEvaluation
from tipbench.simulate import SimulationReport, paired_dict, paired_interval
from tipbench.stats import ALPHA, Condition, Z, all_passed, json_numbers

DEFAULT_MARGIN_REWARD = 0.005  # the simulator's: mean reward per decision (rewards lie in [0, 1])
OFF_POLICY_MARGIN_REWARD = 0.01  # δ: the loss per decision the served traffic must rule out
NOT_WORSE = "not worse off-policy"


@dataclass(frozen=True)
class PromotionDecision:
    challenger: str
    live: str
    conditions: tuple[Condition, ...]
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def promote(self) -> bool:
        return all_passed(self.conditions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "promote": self.promote,
            "challenger": self.challenger,
            "live": self.live,
            "conditions": [c.to_dict() for c in self.conditions],
            "evidence": self.evidence,
        }


def _simulator(
    challenger: str, live: str, report: SimulationReport, margin: float, alpha: float
) -> Condition:
    comparison = report.policy(challenger).vs_live
    if comparison is None or comparison.n_pairs == 0:
        return Condition("beats live in the simulator", False, "no paired simulation")
    diff, p = comparison.mean_diff, comparison.p_value
    passed = diff >= margin and p < alpha
    why = "" if passed else (" (below the margin)" if diff < margin else f" (p ≥ {alpha:g})")
    return Condition(
        "beats live in the simulator",
        passed,
        f"{challenger} − {live} = {diff:+.4f} reward per decision "
        f"{paired_interval(comparison)}, p = {p:.4g} over "
        f"{comparison.n_pairs} seeds; margin {margin:g}{why}",
    )


def more_decisions(comparison: Comparison, delta: float) -> int | None:
    """About how many more shared decisions would lift the lower bound above −δ if the
    difference stayed where it is (its standard error shrinks as 1/√n); None if it lies at
    −δ or below, where more traffic settles nothing unless the estimate itself rises."""
    d = comparison.difference
    if d is None or d.value <= -delta:
        return None
    n = comparison.decisions
    needed = n * (Z * d.se / (d.value + delta)) ** 2
    return max(1, math.ceil(needed - n))


def _simulator_alone(why: str) -> Condition:
    return Condition(NOT_WORSE, True, f"{why}: no usable traffic, the simulator decides alone")


def _thin(found: PolicyEvaluation, delta: float) -> Condition:
    """The challenger has traffic, but too little for an estimate: refuse, asking for more."""
    more = found.more_needed or 0
    return Condition(
        NOT_WORSE,
        False,
        f"{found.status} in the log ({found.reason}): cannot rule out a loss of {delta:g}: "
        f"about {more:,} more shadow decisions expected",
    )


def _off_policy(
    challenger: str, live: str, evaluation: EvaluationReport | None, delta: float
) -> Condition:
    if evaluation is None or evaluation.rewarded == 0:
        return _simulator_alone("the decision log holds no rewarded decision")
    found = next((p for p in evaluation.policies if p.policy == challenger), None)
    if found is None:
        return _simulator_alone(f"{challenger} was not evaluated on the log")
    if found.status != "estimated":
        if found.decisions == 0 or found.more_needed is None:
            return _simulator_alone(f"{found.status} in the log ({found.reason})")
        return _thin(found, delta)
    estimate = found.estimates["dr"]
    comparison = evaluation.comparison(challenger)
    observed = evaluation.observed_value(live)
    seen = (
        f"observed {live} {observed.value.value:.4f} over {observed.decisions:,} decisions"
        if observed
        else f"no decision of {live} in the log"
    )
    head = (
        f"DR {challenger} {estimate.text()} vs {seen}"
    )
    if comparison is None or comparison.difference is None:
        return _simulator_alone(f"{head}; no decision of {live} it scored")
    d = comparison.difference
    figure = (
        f"{head}; paired difference {d.text(signed=True)} "
        f"over {comparison.decisions:,} decisions"
    )
    if d.low > -delta:
        return Condition(
            NOT_WORSE, True, f"{figure}: a loss of {delta:g} ruled out (lower bound > −{delta:g})"
        )
    if d.high < -delta:
        return Condition(NOT_WORSE, False, f"{figure}: worse than {live} by more than {delta:g}")
    more = more_decisions(comparison, delta)
    expected = (
        f"about {more:,} more shadow decisions expected"
        if more is not None
        else "the estimate itself is a loss of that much: more traffic settles it only if "
        "the estimate rises"
    )
    return Condition(NOT_WORSE, False, f"{figure}: cannot rule out a loss of {delta:g}: {expected}")


def decide_promotion(
    challenger: str,
    live: str,
    simulation: SimulationReport | None,
    evaluation: EvaluationReport | None,
    margin: float = DEFAULT_MARGIN_REWARD,
    alpha: float = ALPHA,
    off_policy_margin: float = OFF_POLICY_MARGIN_REWARD,
) -> PromotionDecision:
    """Whether `challenger` should replace `live` (see the module's rule); the simulation is
    needed unless the challenger is the live policy."""
    if challenger == live or simulation is None:
        return PromotionDecision(
            challenger,
            live,
            (Condition("not live already", False, f"{challenger} is the live policy"),),
        )
    conditions = (
        Condition("not live already", True, f"the live policy is {live}"),
        _simulator(challenger, live, simulation, margin, alpha),
        _off_policy(challenger, live, evaluation, off_policy_margin),
    )
    comparison = simulation.policy(challenger).vs_live
    evidence: dict[str, Any] = {
        "margin": margin,
        "alpha": alpha,
        "off_policy_margin": off_policy_margin,
        "simulation": {
            "seeds": list(simulation.seeds),
            "days": simulation.days,
            "reward": {p.policy: p.overall["reward"].to_dict() for p in simulation.policies},
            "vs_live": None if comparison is None else paired_dict(comparison),
        },
    }
    if evaluation is not None:
        evidence["evaluation"] = evaluation.to_dict()
    return PromotionDecision(challenger, live, conditions, json_numbers(evidence))

