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
   would give an 80% chance of settling it (`decisions_needed`); one wholly below −δ refuses
   as worse.

Condition 3 passes only on an estimate: every log without one refuses as "not enough
traffic", saying why (no rewarded decision, no decision with the challenger's probabilities
or none that it can be replayed on, none of the live policy's that it scored, too few
decisions, an effective sample too small: an ESS of 0 when the log never showed what it
would), and, where more shadow traffic would give one, about how much. A log where the
challenger puts probability on tips the live policy never shows refuses too ("no overlap"):
no amount of that traffic tells what those tips earn. So less evidence never passes more
easily than more: no traffic, or traffic that never showed the challenger's choices, used to
leave the simulator to decide alone, and passed a challenger truly worse by 0.11 in 12% of
logs of 100 decisions where a log with an effective sample of 9 refused.

Without the margin ("not significantly worse": the interval's upper bound above 0) a
noisier, lower-overlap challenger passed more easily than a well-measured one; with it, a
wider interval is harder to pass, not easier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from tipbench.evaluate import MIN_DECISIONS, Comparison, EvaluationReport, PolicyEvaluation
from tipbench.simulate import SimulationReport, paired_interval
from tipbench.stats import ALPHA, Condition, all_passed, gate_fields, json_numbers

DEFAULT_MARGIN_REWARD = 0.005  # the simulator's: mean reward per decision (rewards lie in [0, 1])
OFF_POLICY_MARGIN_REWARD = 0.01  # δ: the loss per decision the served traffic must rule out
NOT_WORSE = "not worse off-policy"
POWER = 0.8  # the chance the traffic advice aims at, of ruling out a loss of δ


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
        """JSON-ready: the verdict and its conditions as both gates write them
        (`stats.gate_fields`), the challenger, the live policy and the evidence."""
        return {
            **gate_fields(self.conditions),
            "challenger": self.challenger,
            "live": self.live,
            "evidence": self.evidence,
        }


def _simulator(
    challenger: str, live: str, report: SimulationReport, margin: float, alpha: float
) -> Condition:
    comparison = report.policy(challenger).vs_live
    if comparison is None or comparison.n_pairs == 0:
        return Condition("beats live in the simulator", False, "no paired simulation")
    diff, p = comparison.difference.value, comparison.p_value
    passed = diff >= margin and p < alpha
    why = "" if passed else (" (below the margin)" if diff < margin else f" (p ≥ {alpha:g})")
    return Condition(
        "beats live in the simulator",
        passed,
        f"{challenger} − {live} = {diff:+.4f} reward per decision "
        f"{paired_interval(comparison)}, p = {p:.4g} over "
        f"{comparison.n_pairs} seeds; margin {margin:g}{why}",
    )


def decisions_needed(
    sd: float, delta: float, difference: float = 0.0, power: float = POWER
) -> float:
    """Decisions for a `power` chance that the 95% interval's lower bound of a difference
    lies above −δ, when the difference truly is `difference` and one decision's term has
    standard deviation `sd`: n = ((z₀.₉₇₅ + z_power)·sd/(difference + δ))² (the one-sided
    test at 2.5% of "worse by δ", Chow & Liu ch. 3). Infinite where difference ≤ −δ.

    A challenger truly level with the live policy (difference 0) with sd ≈ 1 needs about
    3,140 decisions at δ = 0.05 and 78,500 at δ = 0.01 for 80% power; (1.96·sd/δ)², the
    figure once given, is the point where the gate passes only half the time.
    """
    if difference + delta <= 0:
        return math.inf
    z = NormalDist().inv_cdf(1 - ALPHA / 2) + NormalDist().inv_cdf(power)
    return (z * sd / (difference + delta)) ** 2


def more_decisions(comparison: Comparison, delta: float) -> int | None:
    """About how many more shared decisions give an 80% chance (`POWER`) of lifting the lower
    bound above −δ if the difference stays where it is (`decisions_needed` at its estimate
    and spread); None if it lies at −δ or below, where more traffic settles nothing unless
    the estimate itself rises."""
    d = comparison.difference
    if d is None or d.value <= -delta:
        return None
    n = comparison.decisions
    needed = decisions_needed(d.se * math.sqrt(n), delta, d.value)
    return max(1, math.ceil(needed - n))


def _not_enough(why: str, delta: float, more: int | None = None, advice: str = "") -> Condition:
    """No estimate to decide on: refuse, saying why and, where known, what would give one."""
    figure = f"not enough traffic: {why}: cannot rule out a loss of {delta:g}"
    if more is not None:
        figure += f": about {more:,} more shadow decisions expected before an estimate"
    elif advice:
        figure += f": {advice}"
    return Condition(NOT_WORSE, False, figure)


def _without_estimate(challenger: str, found: PolicyEvaluation, delta: float) -> Condition:
    if found.status == "no overlap":
        return Condition(
            NOT_WORSE,
            False,
            f"no overlap in the log ({found.reason}): cannot rule out a loss of {delta:g}: "
            "more of this traffic would not tell what those tips earn",
        )
    return _not_enough(
        f"{found.status} in the log ({found.reason})",
        delta,
        found.more_needed,
        f"run {challenger} as a shadow to log its probabilities",
    )


def _off_policy(
    challenger: str, live: str, evaluation: EvaluationReport | None, delta: float
) -> Condition:
    if evaluation is None or evaluation.rewarded == 0:
        return _not_enough("the decision log holds no rewarded decision", delta, MIN_DECISIONS)
    found = next((p for p in evaluation.policies if p.policy == challenger), None)
    if found is None:
        return _not_enough(f"{challenger} was not evaluated on the log", delta)
    if found.status != "estimated":
        return _without_estimate(challenger, found, delta)
    estimate = found.estimates["dr"]
    comparison = evaluation.comparison(challenger)
    observed = evaluation.observed_value(live)
    seen = (
        f"observed {live} {observed.value.value:.4f} over {observed.decisions:,} decisions"
        if observed
        else f"no decision of {live} in the log"
    )
    head = f"DR {challenger} {estimate.text()} vs {seen}"
    if comparison is None or comparison.difference is None:
        return _not_enough(
            f"{head}; fewer than 2 decisions of {live} carry its probabilities",
            delta,
            advice=f"run {challenger} as a shadow of {live}",
        )
    d = comparison.difference
    figure = (
        f"{head}; paired difference {d.text(signed=True)} over {comparison.decisions:,} decisions"
    )
    if d.low > -delta:
        return Condition(
            NOT_WORSE, True, f"{figure}: a loss of {delta:g} ruled out (lower bound > −{delta:g})"
        )
    if d.high < -delta:
        return Condition(NOT_WORSE, False, f"{figure}: worse than {live} by more than {delta:g}")
    more = more_decisions(comparison, delta)
    expected = (
        f"about {more:,} more shadow decisions to rule it out with {POWER:.0%} power (if "
        "the difference stays where it is)"
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
            "vs_live": None if comparison is None else comparison.to_dict(),
        },
    }
    if evaluation is not None:
        evidence["evaluation"] = evaluation.to_dict()
    return PromotionDecision(challenger, live, conditions, json_numbers(evidence))
