"""`tipbench policy evaluate`: what the decision log says about each policy.

Every policy that decided is shown with its observed mean reward (on-policy: the rewards of
its own decisions). Every shadow (and every policy asked for) gets the off-policy estimates of
`_estimators`: from its logged probabilities, or replayed (`_replay`) when the log has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tipbench.evaluate._estimators import (
    CLIP_WEIGHT,
    MIN_DECISIONS,
    MIN_ESS,
    PolicyEvaluation,
    evaluate_policy,
    reward_model,
    unavailable,
)
from tipbench.evaluate._replay import CannotReplay, replay
from tipbench.evaluate._traffic import Traffic
from tipbench.policies import PolicyConfig, policy_spec
from tipbench.stats import Estimate


@dataclass(frozen=True)
class Observed:
    """A deciding policy's own rewards: mean and 95% interval."""

    policy: str
    decisions: int
    value: Estimate


@dataclass(frozen=True)
class Comparison:
    """A policy's DR estimate minus the live policy's observed reward, on the decisions the
    live policy made and the other scored (paired by decision)."""

    policy: str
    live: str
    decisions: int
    difference: Estimate | None  # None: no shared decisions


@dataclass(frozen=True)
class EvaluationReport:
    decisions: int  # rows of the log evaluated
    rewarded: int
    live: str | None
    observed: tuple[Observed, ...]
    policies: tuple[PolicyEvaluation, ...]
    versus_live: tuple[Comparison, ...]
    score_left_out: int = 0  # `/score` decisions of the log not evaluated (not asked for)

    def policy(self, name: str) -> PolicyEvaluation:
        return next(p for p in self.policies if p.policy == name)

    def observed_value(self, name: str) -> Observed | None:
        return next((o for o in self.observed if o.policy == name), None)

    def comparison(self, name: str) -> Comparison | None:
        return next((c for c in self.versus_live if c.policy == name), None)

    def to_dict(self) -> dict[str, Any]:
        def estimate(e: Estimate | None) -> dict[str, Any] | None:
            return None if e is None else e.to_dict()

        return {
            "decisions": self.decisions,
            "rewarded": self.rewarded,
            "score_left_out": self.score_left_out,
            "live": self.live,
            "observed": [
                {"policy": o.policy, "decisions": o.decisions, **(estimate(o.value) or {})}
                for o in self.observed
            ],
            "policies": [p.to_dict() for p in self.policies],
            "versus_live": [
                {
                    "policy": c.policy,
                    "live": c.live,
                    "decisions": c.decisions,
                    "difference": estimate(c.difference),
                }
                for c in self.versus_live
            ],
        }


def _mean(values: np.ndarray) -> Estimate:
    n = len(values)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return Estimate.normal(mean, se, n=n)


def _live(traffic: Traffic) -> str | None:
    """The policy that served the latest `/serve` decision."""
    return next(
        (
            d
            for d, r in zip(reversed(traffic.decider), reversed(traffic.route), strict=True)
            if r == "serve"
        ),
        None,
    )


def evaluate(
    traffic: Traffic,
    policies: Sequence[str] | None = None,
    *,
    live: str | None = None,
    settings: Mapping[str, PolicyConfig] | None = None,
    clip: float = CLIP_WEIGHT,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
) -> EvaluationReport:
    """Evaluate `policies` (default: every policy the log has probabilities of, but the live
    one) on the log; `live` defaults to the policy of the latest `/serve` decision.

    Raises:
        ConfigError: an unknown policy, or one that cannot be replayed on this log.
    """
    for name in policies or ():
        policy_spec(name)
    live = live or _live(traffic)
    deciders = list(dict.fromkeys(traffic.decider))
    decider = np.array(traffic.decider, dtype=object)
    observed = tuple(
        Observed(d, int((decider == d).sum()), _mean(traffic.reward[decider == d]))
        for d in deciders
    )
    names = list(policies) if policies is not None else [p for p in traffic.policies if p != live]
    q = reward_model(traffic) if traffic.n else np.zeros(traffic.mask.shape)
    evaluations = []
    for name in names:
        logged = traffic.targets.get(name)
        source: Literal["logged", "replayed"] = "logged" if logged is not None else "replayed"
        if logged is not None:
            probabilities = logged
        else:
            try:
                probabilities = replay(traffic, name, settings.get(name) if settings else None)
            except CannotReplay as exc:
                evaluations.append(unavailable(name, str(exc)))
                continue
        evaluations.append(
            evaluate_policy(
                traffic,
                name,
                probabilities,
                q,
                source,
                clip=clip,
                min_decisions=min_decisions,
                min_ess=min_ess,
            )
        )
    comparisons = tuple(
        _versus_live(traffic, e, live)
        for e in evaluations
        if live and e.policy != live and e.status == "estimated"
    )
    return EvaluationReport(
        decisions=traffic.decisions,
        rewarded=traffic.n,
        live=live,
        observed=observed,
        policies=tuple(evaluations),
        versus_live=comparisons,
        score_left_out=traffic.score_left_out,
    )


def _versus_live(traffic: Traffic, evaluation: PolicyEvaluation, live: str) -> Comparison:
    decider = np.array(traffic.decider, dtype=object)[evaluation.rows]
    shared = decider == live
    n = int(shared.sum())
    if n < 2:
        return Comparison(evaluation.policy, live, n, None)
    differences = evaluation.dr_terms[shared] - traffic.reward[evaluation.rows][shared]
    return Comparison(evaluation.policy, live, n, _mean(differences))
