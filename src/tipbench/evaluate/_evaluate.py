"""`tipbench policy evaluate`: what the decision log says about each policy.

Every policy that decided is shown with its observed mean reward (on-policy: the rewards of
its own decisions). Every shadow (and every policy asked for) gets the off-policy estimates of
`_estimators`: from its logged probabilities, or replayed (`_replay`) when the log has none.
A contrast of two targets (`contrasts`) is their difference paired by decision.
The log is read once, chunk by chunk (`traffic_chunks`), into sums (`_sums`): memory does not
grow with its length but for the decision ids (`_duplicates`, 16 bytes a decision).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tipbench._errors import ConfigError
from tipbench.evaluate._estimators import (
    CLIP_WEIGHT,
    MIN_DECISIONS,
    MIN_ESS,
    REWARD_MODEL_RIDGE,
    PolicyEvaluation,
    estimate_contrast,
    estimate_policy,
    paired_difference,
    unavailable,
)
from tipbench.evaluate._replay import Replayer
from tipbench.evaluate._sums import FOLDS, Categories, PolicySums, RewardModelSums
from tipbench.evaluate._traffic import Traffic
from tipbench.policies import PolicyConfig, policy_spec
from tipbench.stats import Estimate, json_number


@dataclass(frozen=True)
class Observed:
    """A deciding policy's own rewards: mean and 95% interval (none from one decision)."""

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
    difference: Estimate | None  # None: fewer than 2 shared decisions


@dataclass(frozen=True)
class EvaluationReport:
    decisions: int  # rows of the log evaluated
    rewarded: int
    live: str | None
    observed: tuple[Observed, ...]
    policies: tuple[PolicyEvaluation, ...]
    versus_live: tuple[Comparison, ...]
    score_left_out: int = 0  # `/score` decisions of the log not evaluated (not asked for)
    clip: float = CLIP_WEIGHT  # importance weights above it were clipped
    floor: float = math.nan  # the smallest probability any rewarded decision logged
    contrasts: tuple[PolicyEvaluation, ...] = ()  # each asked contrast: A − B, paired

    def policy(self, name: str) -> PolicyEvaluation:
        return next(p for p in self.policies if p.policy == name)

    def observed_value(self, name: str) -> Observed | None:
        return next((o for o in self.observed if o.policy == name), None)

    def comparison(self, name: str) -> Comparison | None:
        return next((c for c in self.versus_live if c.policy == name), None)

    def contrast(self, name: str) -> PolicyEvaluation:
        return next(c for c in self.contrasts if c.policy == name)

    def to_dict(self) -> dict[str, Any]:
        def estimate(e: Estimate | None) -> dict[str, Any] | None:
            return None if e is None else e.to_dict()

        return {
            "decisions": self.decisions,
            "rewarded": self.rewarded,
            "score_left_out": self.score_left_out,
            "live": self.live,
            "clip": self.clip,
            "floor": json_number(self.floor),
            "observed": [
                {"policy": o.policy, "decisions": o.decisions, "value": estimate(o.value)}
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
            "contrasts": [c.to_dict() for c in self.contrasts],
        }


@dataclass
class _Rewards:
    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def estimate(self) -> Estimate:
        mean = self.total / self.n
        if self.n < 2:
            return Estimate(mean, math.nan, math.nan, "none", n=self.n)
        variance = max((self.squares - self.n * mean**2) / (self.n - 1), 0.0)
        return Estimate.normal(mean, math.sqrt(variance / self.n), n=self.n)


@dataclass
class _Reading:
    """What has been read of the log so far."""

    wanted: Sequence[str] | None  # policies to sum (None: every logged one but `skip`)
    skip: str | None
    clip: float
    replayers: dict[str, Replayer]
    contrasts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    categories: Categories = field(default_factory=Categories)
    model: RewardModelSums = field(default_factory=RewardModelSums)
    logged: dict[str, PolicySums] = field(default_factory=dict)
    replayed: dict[str, PolicySums] = field(default_factory=dict)
    contrasted: dict[str, PolicySums] = field(default_factory=dict)
    observed: dict[str, _Rewards] = field(default_factory=dict)
    versions: list[str] = field(default_factory=lambda: ["v1", "v2"])
    decisions: int = 0
    score_left_out: int = 0
    rewarded: int = 0
    last_serve: str | None = None
    floor: float = math.inf

    def sums(self, table: dict[str, PolicySums], name: str) -> PolicySums:
        if name not in table:
            table[name] = PolicySums(self.clip)
            table[name].versions = {
                v: d for v, d in table[name].versions.items() if v in self.versions
            }
        found = table[name]
        found.grow(len(self.categories))
        return found

    def add(self, chunk: Traffic) -> None:
        self.decisions += chunk.decisions
        self.score_left_out += chunk.score_left_out
        if not chunk.n:
            return
        codes = self.categories.codes(chunk)
        self.model.grow(len(self.categories))
        folds = (
            chunk.fold if chunk.fold is not None else (self.rewarded + np.arange(chunk.n)) % FOLDS
        )
        self.rewarded += chunk.n
        if "v2" in self.versions and np.isnan(chunk.x_v2).any():
            self.versions.remove("v2")
            self.model.drop("v2")
            tables = (self.logged, self.replayed, self.contrasted)
            for sums in (s for table in tables for s in table.values()):
                sums.drop("v2")
        xs = {"v1": chunk.x_v1, "v2": chunk.x_v2}
        shown = codes[np.arange(chunk.n), chunk.chosen]
        self.model.add(shown, chunk.reward, folds, xs)
        self._observe(chunk)
        for name, probabilities in chunk.targets.items():
            if (self.wanted is None and name != self.skip) or name in (self.wanted or ()):
                self.sums(self.logged, name).add(chunk, probabilities, codes, folds, xs)
                self.replayers.pop(name, None)
                self.replayed.pop(name, None)
        for name, replayer in self.replayers.items():
            replayed = replayer.step(chunk, codes, len(self.categories))
            if replayed is not None:
                self.sums(self.replayed, name).add(chunk, replayed, codes, folds, xs)
        for name, (a, b) in self.contrasts.items():
            if a in chunk.targets and b in chunk.targets:
                minus = chunk.targets[b]
                self.sums(self.contrasted, name).add(
                    chunk, chunk.targets[a], codes, folds, xs, minus=minus
                )

    def _observe(self, chunk: Traffic) -> None:
        for decider in dict.fromkeys(chunk.decider):
            mine = np.array(chunk.decider, dtype=object) == decider
            rewards = self.observed.setdefault(decider, _Rewards())
            rewards.n += int(mine.sum())
            rewards.total += float(chunk.reward[mine].sum())
            rewards.squares += float((chunk.reward[mine] ** 2).sum())
        for decider, route in zip(reversed(chunk.decider), reversed(chunk.route), strict=True):
            if route == "serve":
                self.last_serve = decider
                break
        logged = chunk.logging[chunk.mask & (chunk.logging > 0)]
        if logged.size:
            self.floor = min(self.floor, float(logged.min()))


def evaluate(
    traffic: Traffic | Iterable[Traffic],
    policies: Sequence[str] | None = None,
    *,
    also: Sequence[str] = (),
    live: str | None = None,
    settings: Mapping[str, PolicyConfig] | None = None,
    clip: float = CLIP_WEIGHT,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
    contrasts: Mapping[str, tuple[str, str]] | None = None,
) -> EvaluationReport:
    """Evaluate `policies` (default: every policy the log has probabilities of, but the live
    one), and `also` these, on the log: one `Traffic`, or its chunks (`traffic_chunks`) read
    once in order; `live` defaults to the policy of the latest `/serve` decision. Each of
    `contrasts` (name → (A, B), two targets of the log) is estimated as A − B on the decisions
    where both are known (`estimate_contrast`); the mapping is read at every chunk, so a
    caller that makes the chunks' targets may add the contrast of two targets when the later
    of them first appears (none of their shared decisions is missed).

    Raises:
        ConfigError: an unknown policy; a contrast with one target on both sides; a bad row of
            the log (as `traffic_chunks`).
    """
    asked = list(dict.fromkeys([*(policies or ()), *also]))
    for name in asked:
        policy_spec(name)
    contrasts = {} if contrasts is None else contrasts
    for name, (a, b) in contrasts.items():
        if a == b:
            raise ConfigError(f"contrast {name!r}: {a!r} is on both sides of the comparison")
    replayers = {name: Replayer(name, settings.get(name) if settings else None) for name in asked}
    wanted = None if policies is None else asked
    reading = _Reading(wanted, live, clip, replayers, contrasts)
    chunks = iter([traffic] if isinstance(traffic, Traffic) else traffic)
    while (chunk := next(chunks, None)) is not None:
        reading.add(chunk)
        del chunk  # not held while the next chunk is read
    live = live or reading.last_serve
    return _report(reading, asked, policies is None, live, min_decisions, min_ess)


def _report(
    reading: _Reading,
    asked: list[str],
    every_logged: bool,
    live: str | None,
    min_decisions: int,
    min_ess: float,
) -> EvaluationReport:
    version = reading.versions[-1]
    models = reading.model.fit(version, REWARD_MODEL_RIDGE) if reading.rewarded else None
    names = [p for p in reading.logged if p != live] if every_logged else []
    names = list(dict.fromkeys([*names, *asked]))
    evaluations, comparisons = [], []
    source: Literal["logged", "replayed"]
    for name in names:
        if name in reading.logged:
            sums, source = reading.logged[name], "logged"
        elif name in reading.replayers and reading.replayers[name].failure:
            evaluations.append(unavailable(name, reading.replayers[name].failure or ""))
            continue
        else:
            sums, source = reading.sums(reading.replayed, name), "replayed"
        found = estimate_policy(
            name, sums, models, version, source, min_decisions=min_decisions, min_ess=min_ess
        )
        evaluations.append(found)
        if live and name != live and found.status == "estimated" and models is not None:
            n, difference = paired_difference(sums, models, version, live)
            comparisons.append(Comparison(name, live, n, difference))
    estimated = tuple(
        estimate_contrast(
            name,
            reading.sums(reading.contrasted, name),
            models,
            version,
            min_decisions=min_decisions,
        )
        for name in list(reading.contrasts)
    )
    return EvaluationReport(
        decisions=reading.decisions,
        rewarded=reading.rewarded,
        live=live,
        observed=tuple(Observed(d, r.n, r.estimate()) for d, r in reading.observed.items()),
        policies=tuple(evaluations),
        versus_live=tuple(comparisons),
        score_left_out=reading.score_left_out,
        clip=reading.clip,
        floor=reading.floor if math.isfinite(reading.floor) else math.nan,
        contrasts=estimated,
    )
