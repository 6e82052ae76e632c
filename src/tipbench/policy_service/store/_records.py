"""What the state store keeps: decisions (with their shadows and reward) and the roles, and
where a candidate tip came from (`TipSource`: the bench's cell that wrote it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tipbench.policies import EVENTS as EVENTS  # what a user did: defined with its reward
from tipbench.policies import Event as Event
from tipbench.policies import Moment, PolicyConfig

EXPIRED = "expired"  # the logged event of a decision whose reward never came
LoggedEvent = Literal["completed", "dismissed", "viewed", "expired"]
Route = Literal["serve", "score"]
ResetScope = Literal["all", "policy", "user"]


UNKNOWN_SOURCE = "unknown source"
"""The source of a candidate whose provenance does not name both its model and prompt."""
SOURCE_FIELDS = ("model", "prompt_version", "experiment", "run_id", "tip_index")
"""A provenance's fields, in the order the log stores and exports them."""


def source_key(model: str | None, prompt_version: str | None) -> str:
    """The source a tip is counted under: `model|prompt_version` (a leaderboard row's name),
    or `UNKNOWN_SOURCE` when either is missing."""
    return f"{model}|{prompt_version}" if model and prompt_version else UNKNOWN_SOURCE


@dataclass(frozen=True)
class TipSource:
    """Where a candidate tip came from: the bench's cell that wrote it (every field optional).

    `model` and `prompt_version` name the source the online tier measures; `experiment`,
    `run_id` (the cell run) and `tip_index` (its place among the run's candidates) point at
    the very tip.
    """

    model: str | None = None
    prompt_version: str | None = None
    experiment: str | None = None
    run_id: str | None = None
    tip_index: int | None = None

    @property
    def key(self) -> str:
        return source_key(self.model, self.prompt_version)

    def fields(self) -> dict[str, Any]:
        """The fields given (the log stores no nulls)."""
        return {name: value for name in SOURCE_FIELDS if (value := getattr(self, name)) is not None}

    @classmethod
    def of(cls, fields: Mapping[str, Any] | None) -> TipSource | None:
        """A provenance read back from the log (None: the candidate had none)."""
        if not fields:
            return None
        return cls(**{name: fields.get(name) for name in SOURCE_FIELDS})


@dataclass(frozen=True)
class CandidateTip:
    tip_id: str
    category: str
    source: TipSource | None = None


@dataclass(frozen=True)
class ScoredCandidate:
    """One candidate as a policy saw it: its score and the probability of choosing it (and,
    in the deciding policy's list, where the tip came from)."""

    tip_id: str
    category: str
    score: float
    probability: float
    source: TipSource | None = None


def moment_fields(moment: Moment) -> dict[str, Any]:
    """A moment as the log stores and exports it (`dataclasses.asdict` is 10× slower)."""
    return {
        "local_hour": moment.local_hour,
        "weekday": moment.weekday,
        "open_tasks": moment.open_tasks,
        "minutes_to_deadline": moment.minutes_to_deadline,
        "tips_today": moment.tips_today,
    }


def candidate_fields(candidate: ScoredCandidate) -> dict[str, Any]:
    """A scored candidate as the log exports it (`source` null without provenance; the store
    keeps it only where there is one)."""
    source = candidate.source
    return {
        "tip_id": candidate.tip_id,
        "category": candidate.category,
        "score": candidate.score,
        "probability": candidate.probability,
        "source": None if source is None else source.fields(),
    }


def scored_candidate(fields: Mapping[str, Any]) -> ScoredCandidate:
    """A scored candidate read back from the log (`candidate_fields`)."""
    return ScoredCandidate(
        fields["tip_id"],
        fields["category"],
        fields["score"],
        fields["probability"],
        TipSource.of(fields.get("source")),
    )


@dataclass(frozen=True)
class PolicyDecision:
    """One policy's choice for a request (the live one's, or a shadow's would-be choice)."""

    policy: str
    feature_version: str
    features: tuple[float, ...]
    candidates: tuple[ScoredCandidate, ...]
    tip_id: str
    propensity: float
    settings: PolicyConfig | None = None  # in force when it decided (None: not recorded)

    @property
    def category(self) -> str:
        return next(c.category for c in self.candidates if c.tip_id == self.tip_id)

    @property
    def source(self) -> str | None:
        """The source of the tip chosen, as counted (`TipSource.key`); None: unknown."""
        chosen = next(c.source for c in self.candidates if c.tip_id == self.tip_id)
        key = UNKNOWN_SOURCE if chosen is None else chosen.key
        return None if key == UNKNOWN_SOURCE else key


@dataclass(frozen=True)
class DecisionRecord:
    """A logged decision: the request, the deciding policy's choice and the shadows' ones."""

    id: str
    sequence: int
    created_at: str  # ISO 8601, UTC
    user_id: str
    route: Route
    moment: Moment
    decision: PolicyDecision
    shadows: tuple[PolicyDecision, ...] = ()
    event_id: str | None = None  # the client's id of the request: a retry gets this decision


@dataclass(frozen=True)
class RewardRecord:
    """A decision's outcome: the user's response, or its expiry (`event` "expired", with the
    default reward or none) when no response came within the reward window."""

    reward: float | None
    event: LoggedEvent
    dwell_s: float | None
    rewarded_at: str  # ISO 8601, UTC: when it arrived, or expired

    @property
    def expired(self) -> bool:
        return self.event == EXPIRED


@dataclass(frozen=True)
class Rewarded:
    """A reward as stored, with the policy whose decision it joined."""

    policy: str
    reward: RewardRecord
    # What this call did (not part of the reward's identity): the shadow policies that learned
    # from it with the policy; or, for a retry, nothing (the reward was stored before).
    shadows: tuple[str, ...] = field(default=(), compare=False)
    replayed: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class LoggedDecision:
    """A decision as exported: the record, and its reward once one arrived."""

    record: DecisionRecord
    reward: RewardRecord | None


@dataclass(frozen=True)
class PolicyCounts:
    """What `/stats/{policy}` counts for a policy since the last reset: its decisions, the
    rewards users gave (expired decisions are counted apart, in `events["expired"]`) and the
    requests it scored as a shadow."""

    decisions: int
    rewards: int
    reward_sum: float
    shadow_decisions: int
    events: dict[str, int] = field(default_factory=dict)
    sources: dict[str, PolicyCounts] = field(default_factory=dict)
    """The same counts of the decisions whose tip came from each source (`TipSource.key`;
    shadows serve nothing, so `shadow_decisions` is 0 there)."""

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.rewards if self.rewards else None


@dataclass(frozen=True)
class Roles:
    """Which policy is served (live) and which only score alongside it (shadows)."""

    live: str
    shadows: tuple[str, ...] = ()

    def role(self, policy: str) -> Literal["live", "shadow", "off"]:
        if policy == self.live:
            return "live"
        return "shadow" if policy in self.shadows else "off"
