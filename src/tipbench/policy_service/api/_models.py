"""The bodies of the policy service's HTTP API (the contract the app's recommender codes to).

Field names are the contract: more may be added, none renamed. Types are strict (an integer
is a JSON integer: not `true`, `"3"` or `3.0`), numbers finite; an out-of-range or missing
field is refused with 422 naming it, before anything is written.

User ids, event ids, decision ids and tip ids are ASCII: 1–128 characters of
`A-Z a-z 0-9 _ . : @ -`. Letters of other scripts would let two ids look alike on every screen
(`Amélie` typed composed or decomposed; a zero-width joiner U+200D or a right-to-left mark
U+200F inside a name), so that an invisible variant of a user is another user, whom erasing
the first misses, and an invisible variant of a tip another candidate, which the duplicate
check lets through and the log counts apart. Erasure (`POST /reset`) alone also takes the user
ids an earlier version admitted (letters, marks and digits of any script, normalised to NFC),
so that the users they name can still be erased; the tip ids an earlier version logged stay in
the log as they were (its rewards, exports and evaluations read them unchanged).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from tipbench.policies import DWELL_CAP_S, Moment, Profile
from tipbench.policy_service.store._records import (
    CandidateTip,
    Event,
    LoggedEvent,
    PolicyCounts,
    ResetScope,
    TipSource,
)

MAX_CANDIDATES = 100
MAX_DWELL_S = 7 * 24 * 3600.0  # a dwell longer than a week is a bug, not attention
ID_PATTERN = r"^[A-Za-z0-9_.:@-]+$"  # ASCII only: no look-alike ids (see the module's doc)
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=ID_PATTERN)]
PolicyName = Annotated[str, StringConstraints(min_length=1, max_length=64)]


def _nfc(value: Any) -> Any:
    return unicodedata.normalize("NFC", value) if isinstance(value, str) else value


# The user ids earlier versions admitted (any script, NFC): erasure still takes them.
StoredUserId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=r"^[\w.:@-]+$"),
    BeforeValidator(_nfc),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class ContextBody(_Body):
    """The moment of the request, in the user's local time."""

    local_hour: float = Field(ge=0, lt=24, examples=[8], description="0 ≤ h < 24; 8.5 is 08:30")
    weekday: int = Field(ge=0, le=6, examples=[1], description="Monday = 0 … Sunday = 6")
    open_tasks: int = Field(ge=0, le=100_000, examples=[3])
    minutes_to_deadline: float | None = Field(
        default=None,
        ge=-1e7,
        le=1e7,
        examples=[600],
        description="to the nearest deadline; null: none; negative: overdue",
    )
    tips_today: int = Field(default=0, ge=0, le=100_000, examples=[0])

    def moment(self) -> Moment:
        return Moment(
            local_hour=self.local_hour,
            weekday=self.weekday,
            open_tasks=self.open_tasks,
            minutes_to_deadline=self.minutes_to_deadline,
            tips_today=self.tips_today,
        )


# A model spec as collect records it (`llamacpp:smollm2-135m`, `ollama:qwen2.5:1.5b`, a path):
# printable ASCII without `|`, which separates it from the prompt in a source's name.
ModelSpecText = Annotated[
    str, StringConstraints(max_length=256, pattern=r"^[!-{}~](?:[ -{}~]*[!-{}~])?$")
]
PromptVersionId = Annotated[  # the suite's rule for a prompt version's id
    str, StringConstraints(max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")
]
ExperimentName = Annotated[
    str, StringConstraints(max_length=256, pattern=r"^[!-~](?:[ -~]*[!-~])?$")
]


class SourceBody(_Body):
    """Where a candidate tip came from: the bench's cell that wrote it. Every field is
    optional; `model` and `prompt_version` together name the source the online tier measures
    (without both the tip counts as "unknown source")."""

    model: ModelSpecText | None = Field(default=None, examples=["llamacpp:smollm2-135m"])
    prompt_version: PromptVersionId | None = Field(default=None, examples=["v2-mentor"])
    experiment: ExperimentName | None = Field(default=None, examples=["tip-bench-auto"])
    run_id: Identifier | None = Field(
        default=None, examples=["0f3c2a9d8b7e4f1a9c6d5e4b3a2f1e0d"], description="the cell run"
    )
    tip_index: int | None = Field(
        default=None, ge=0, le=10_000, examples=[2], description="its place among the run's tips"
    )

    @field_validator("tip_index")
    @classmethod
    def _in_a_run(cls, tip_index: int | None, info: ValidationInfo) -> int | None:
        if tip_index is not None and info.data.get("run_id") is None:
            raise ValueError("a tip_index points into a run: name its run_id")
        return tip_index

    def source(self) -> TipSource | None:
        values = self.model_dump(exclude_none=True)
        return TipSource(**values) if values else None


class CandidateBody(_Body):
    tip_id: Identifier = Field(examples=["t1"])
    category: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        examples=["focus"], description="a category of the suite's tip catalogue"
    )
    source: SourceBody | None = Field(
        default=None, description="where the tip came from (kept with the decision, exported)"
    )


class ProfileBody(_Body):
    """An override of the v2 profile features (as a simulator passes them)."""

    completion_rate: float = Field(ge=0, le=1)
    dismiss_rate: float = Field(ge=0, le=1)
    mean_dwell_s: float = Field(ge=0, le=MAX_DWELL_S)
    preferred_hour: float | None = Field(default=None, ge=0, lt=24)
    tips_seen: int = Field(ge=0, le=10_000_000)

    @field_validator("dismiss_rate")
    @classmethod
    def _rates_add_up(cls, dismiss_rate: float, info: ValidationInfo) -> float:
        completion_rate = info.data.get("completion_rate")
        if completion_rate is not None and completion_rate + dismiss_rate > 1:
            raise ValueError("completion_rate + dismiss_rate must not exceed 1")
        return dismiss_rate

    def profile(self) -> Profile:
        return Profile(
            completion_rate=self.completion_rate,
            dismiss_rate=self.dismiss_rate,
            mean_dwell_s=min(self.mean_dwell_s, DWELL_CAP_S),
            preferred_hour=self.preferred_hour,
            tips_seen=self.tips_seen,
        )


class DecisionRequest(_Body):
    """`POST /serve` and `POST /score/{policy}`."""

    event_id: Identifier | None = Field(
        default=None,
        examples=["req-7f3a"],
        description="the client's id of this request: a retry with the same id gets the same "
        "decision (another request with it: 409)",
    )
    user_id: Identifier = Field(examples=["u1"])
    context: ContextBody
    candidates: list[CandidateBody] = Field(min_length=1, max_length=MAX_CANDIDATES)
    profile_features: ProfileBody | None = None

    @field_validator("candidates")
    @classmethod
    def _distinct(cls, candidates: list[CandidateBody]) -> list[CandidateBody]:
        seen: set[str] = set()
        for candidate in candidates:
            if candidate.tip_id in seen:
                raise ValueError(f"duplicate tip_id {candidate.tip_id!r}")
            seen.add(candidate.tip_id)
        return candidates

    def candidate_tips(self) -> list[CandidateTip]:
        return [
            CandidateTip(c.tip_id, c.category, c.source.source() if c.source else None)
            for c in self.candidates
        ]


class ShadowChoice(BaseModel):
    tip_id: str
    propensity: float
    probabilities: dict[str, float]


class DecisionResponse(BaseModel):
    decision_id: str
    policy: str
    tip_id: str
    propensity: float = Field(description="the exact probability the chosen tip had (> 0)")
    scores: dict[str, float]
    probabilities: dict[str, float]


class ServeResponse(DecisionResponse):
    shadows: dict[str, ShadowChoice]


class RewardRequest(_Body):
    """`POST /reward` and `/reward/{policy}`: what the user did with the served tip."""

    decision_id: Identifier
    reward: float | None = Field(
        default=None,
        ge=0,
        le=1,
        examples=[1.0],
        description="Left out: the event's reward as tipbench maps it (completed 1, "
        "dismissed 0, viewed 0.5 × min(dwell, 60 s)/60 s), as the simulator does.",
    )
    event: Event
    dwell_s: float | None = Field(default=None, ge=0, le=MAX_DWELL_S, examples=[42.0])


class RewardResponse(BaseModel):
    """The reward stored for the decision (a retry gets the first one)."""

    decision_id: str
    policy: str
    reward: float | None
    event: LoggedEvent


class SettingsBody(_Body):
    """A policy's settings (`PUT /config`: only those named change)."""

    epsilon: float | None = None
    alpha: float | None = None
    floor: float | None = None
    ridge: float | None = None
    seed: int | None = None


class ConfigBody(_Body):
    """`PUT /config`: what it names changes (for every replica at once), the rest is kept.
    Values are checked on the whole result: a bad one is refused naming it, nothing changes."""

    live: PolicyName | None = Field(default=None, examples=["linucb"])
    shadows: list[PolicyName] | None = Field(default=None, max_length=16)
    policies: dict[PolicyName, SettingsBody] | None = Field(
        default=None, max_length=16, examples=[{"egreedy-v2": {"epsilon": 0.05}}]
    )
    reward_window_s: float | None = Field(default=None, examples=[86400])
    default_reward: float | None = Field(default=None, examples=[0.0])
    retention_s: float | None = Field(default=None, examples=[90 * 86400])

    def change(self) -> dict[str, Any]:
        """The partial config document this body asks for."""
        return self.model_dump(exclude_unset=True)


class SettingsResponse(BaseModel):
    epsilon: float
    alpha: float
    floor: float
    ridge: float
    seed: int


class ConfigResponse(BaseModel):
    """The serving config in force."""

    live: str
    shadows: list[str]
    policies: dict[str, SettingsResponse]
    reward_window_s: float | None
    default_reward: float | None
    retention_s: float | None


class SourceStatsResponse(BaseModel):
    """What was served of one source's tips (`model|prompt_version`, or "unknown source")."""

    model: str | None
    prompt_version: str | None
    decisions: int
    rewards: int
    mean_reward: float | None
    events: dict[str, int]

    @classmethod
    def of(cls, key: str, counts: PolicyCounts) -> SourceStatsResponse:
        model, _, prompt = key.partition("|")
        return cls(
            model=model if prompt else None,
            prompt_version=prompt or None,
            decisions=counts.decisions,
            rewards=counts.rewards,
            mean_reward=counts.mean_reward,
            events=counts.events,
        )


def source_stats(sources: dict[str, PolicyCounts]) -> dict[str, SourceStatsResponse]:
    return {key: SourceStatsResponse.of(key, counts) for key, counts in sources.items()}


class PolicyStatsResponse(BaseModel):
    policy: str
    role: Literal["live", "shadow", "off"]
    decisions: int
    rewards: int
    mean_reward: float | None
    shadow_decisions: int
    events: dict[str, int]
    features: list[str]
    live: str
    shadows: list[str]
    sources: dict[str, SourceStatsResponse] = Field(
        description="its decisions by the source of the tip served"
    )


class ServiceStatsResponse(BaseModel):
    live: str
    shadows: list[str]
    policies: dict[str, PolicyStatsResponse]
    sources: dict[str, SourceStatsResponse] = Field(
        description="every policy's decisions by the source of the tip served"
    )


class ResetRequest(_Body):
    scope: ResetScope
    policy: PolicyName | None = None
    user_id: StoredUserId | None = None


class ResetResponse(BaseModel):
    scope: ResetScope
    policy: str | None
    user_id: str | None
