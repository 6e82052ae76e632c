"""A simulation's report: every policy's figures over seeds, with CIs and paired differences.

Each figure is the mean over seeds of the per-seed means, with a 95% bootstrap interval over
seeds (`tipbench.stats.bootstrap_mean_ci`, as the leaderboard's), a `tipbench.stats.Estimate`;
below the seeds an exact paired interval needs (6 at 95%, `tipbench.stats.pairs_needed`) it
has none: a percentile bootstrap of 2 seeds is their range, which holds the mean half the
time, and the paired column already said no interval exists there.
Every policy saw the same worlds (common random numbers), so each is compared with the live
policy paired by seed: the mean per-seed difference of reward, its interval and the sign-flip
permutation p-value (`tipbench.stats.paired_comparison`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tipbench.simulate._outcome import Metrics, SeedOutcome
from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    Estimate,
    IntervalMethod,
    PairedComparison,
    bootstrap_mean_ci,
    json_number,
    paired_comparison,
    pairs_needed,
)

METRICS = ("reward", "regret", "completion", "dismiss")


def over_seeds(values: Sequence[float], seed: int = 0) -> Estimate:
    """The mean of per-seed figures (NaN ones left out) with its `CONFIDENCE` percentile
    bootstrap interval over the seeds; none from fewer seeds than `pairs_needed`."""
    finite = [v for v in values if not math.isnan(v)]
    mean, low, high = bootstrap_mean_ci(finite, CONFIDENCE, seed=seed)
    if len(finite) < pairs_needed(ALPHA):
        low = high = math.nan
    method: IntervalMethod = "none" if math.isnan(low) or math.isnan(high) else "bootstrap"
    return Estimate(mean, low, high, method, n=len(finite))


@dataclass(frozen=True)
class PolicyReport:
    """One policy's figures over the seeds."""

    policy: str
    overall: dict[str, Estimate]  # metric → estimate
    per_persona: dict[str, dict[str, Estimate]]  # persona → metric → estimate
    per_day: tuple[Estimate, ...]  # mean reward of each day: the learning curve
    per_seed: dict[int, float]  # mean reward in each seed's world
    vs_live: PairedComparison | None  # reward − the live policy's, paired by seed

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "overall": {k: v.to_dict() for k, v in self.overall.items()},
            "per_persona": {
                persona: {k: v.to_dict() for k, v in metrics.items()}
                for persona, metrics in self.per_persona.items()
            },
            "per_day": [v.to_dict() for v in self.per_day],
            "per_seed": {str(k): v for k, v in self.per_seed.items()},
            "vs_live": None if self.vs_live is None else self.vs_live.to_dict(),
        }


@dataclass(frozen=True)
class SimulationReport:
    """What `tipbench policy simulate` found."""

    live: str
    seeds: tuple[int, ...]
    days: int
    oracle: Estimate  # the oracle's mean expected reward
    policies: tuple[PolicyReport, ...]

    def policy(self, name: str) -> PolicyReport:
        return next(p for p in self.policies if p.policy == name)

    @property
    def policy_names(self) -> tuple[str, ...]:
        return tuple(p.policy for p in self.policies)

    @classmethod
    def from_dict(cls, data: dict[str, Any], live: str | None = None) -> SimulationReport:
        """A report read back from `to_dict`'s JSON (a simulation's `simulation.json`), its
        paired comparisons taken against `live` (default: the simulation's own live policy)
        from the per-seed rewards.

        Raises:
            ValueError: the JSON is not a report, or `live` was not simulated.
        """
        try:
            live = live or str(data["live"])
            per_seed = {
                str(p["policy"]): {str(k): float(v) for k, v in p["per_seed"].items()}
                for p in data["policies"]
            }
            if live not in per_seed:
                raise ValueError(f"the simulation did not include {live}")
            policies = tuple(
                PolicyReport(
                    policy=str(p["policy"]),
                    overall={k: Estimate.from_dict(v) for k, v in p["overall"].items()},
                    per_persona={
                        persona: {k: Estimate.from_dict(v) for k, v in metrics.items()}
                        for persona, metrics in p["per_persona"].items()
                    },
                    per_day=tuple(Estimate.from_dict(v) for v in p["per_day"]),
                    per_seed={int(k): v for k, v in per_seed[p["policy"]].items()},
                    vs_live=None
                    if p["policy"] == live
                    else paired_comparison(per_seed[live], per_seed[p["policy"]]),
                )
                for p in data["policies"]
            )
            return cls(
                live,
                tuple(int(s) for s in data["seeds"]),
                int(data["days"]),
                Estimate.from_dict(data["oracle"]),
                policies,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a simulation report ({exc!r})") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "live": self.live,
            "seeds": list(self.seeds),
            "days": self.days,
            "oracle": self.oracle.to_dict(),
            "policies": [p.to_dict() for p in self.policies],
        }

    def persona_rows(self) -> list[dict[str, Any]]:
        """The per-persona table: a row per (policy, persona) with every metric's mean and
        interval (and the overall figures as persona `all`)."""
        rows = []
        for report in self.policies:
            tables = {"all": report.overall, **report.per_persona}
            for persona, metrics in tables.items():
                row: dict[str, Any] = {"policy": report.policy, "persona": persona}
                for name in METRICS:
                    estimate = metrics[name]
                    row[name] = json_number(estimate.value)
                    row[f"{name}_low"] = json_number(estimate.low)
                    row[f"{name}_high"] = json_number(estimate.high)
                row["seeds"] = metrics["reward"].n
                rows.append(row)
        return rows


def versus(live: Sequence[SeedOutcome], other: Sequence[SeedOutcome]) -> PairedComparison:
    """`other`'s mean reward minus the live policy's, paired by seed."""
    return paired_comparison(
        {str(o.seed): o.overall.reward for o in live},
        {str(o.seed): o.overall.reward for o in other},
    )


def _estimates(metrics: Sequence[Metrics]) -> dict[str, Estimate]:
    return {name: over_seeds([getattr(m, name) for m in metrics]) for name in METRICS}


def summarise(
    outcomes: Sequence[SeedOutcome], live: str, personas: Sequence[str] = ()
) -> SimulationReport:
    """Aggregate per-seed outcomes (every policy in every seed) into the report; per-persona
    figures come in the order of `personas` (then any other persona found).

    Raises:
        ValueError: if a policy misses a seed another has, or `live` has no outcome.
    """
    policies = list(dict.fromkeys(o.policy for o in outcomes))
    if live not in policies:
        raise ValueError(f"no outcome of the live policy {live!r}")
    by_policy = {
        p: sorted((o for o in outcomes if o.policy == p), key=lambda o: o.seed) for p in policies
    }
    seeds = tuple(o.seed for o in by_policy[live])
    for policy, found in by_policy.items():
        if tuple(o.seed for o in found) != seeds:
            raise ValueError(f"policy {policy!r} was not simulated with the same seeds")
    days = len(by_policy[live][0].per_day) if seeds else 0
    reports = []
    for policy, found in by_policy.items():
        present = {p for o in found for p in o.per_persona}
        order = [*personas, *sorted(present - set(personas))]
        per_day = tuple(over_seeds([o.per_day[d] for o in found]) for d in range(days))
        reports.append(
            PolicyReport(
                policy=policy,
                overall=_estimates([o.overall for o in found]),
                per_persona={
                    persona: _estimates(
                        [o.per_persona[persona] for o in found if persona in o.per_persona]
                    )
                    for persona in order
                    if persona in present
                },
                per_day=per_day,
                per_seed={o.seed: o.overall.reward for o in found},
                vs_live=None if policy == live else versus(by_policy[live], found),
            )
        )
    oracle = over_seeds([o.oracle_reward for o in by_policy[live]])
    return SimulationReport(live, seeds, days, oracle, tuple(reports))
