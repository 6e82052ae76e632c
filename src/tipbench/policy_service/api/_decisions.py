"""The serving routes (the serving scope): decide, learn from rewards, read the stats.

The original recommender's paths `/score/egreedy/v2`, `/reward/egreedy/v2` and
`/stats/egreedy/v2` (and `/v1`) answer as aliases of the named policies' routes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, status

from tipbench.policies import FEATURE_NAMES, POLICIES, policy_spec, reward_of
from tipbench.policy_service._service import PolicyService, UnknownCategory
from tipbench.policy_service.api._deps import Metrics, Service, field_error, known_policy
from tipbench.policy_service.api._metrics import ServiceMetrics
from tipbench.policy_service.api._models import (
    ConfigResponse,
    DecisionRequest,
    DecisionResponse,
    PolicyStatsResponse,
    RewardRequest,
    RewardResponse,
    ServeResponse,
    ServiceStatsResponse,
    ShadowChoice,
    source_stats,
)
from tipbench.policy_service.store._records import DecisionRecord, PolicyDecision
from tipbench.policy_service.store._store import DecisionConflict, DecisionNotFound

POLICY_PATH = Path(description="one of " + ", ".join(POLICIES), examples=["egreedy-v1"])
#: The original recommender's policy paths, and the policy each is an alias of.
ORIGINAL_PATHS = {"egreedy/v1": "egreedy-v1", "egreedy/v2": "egreedy-v2"}
PolicyName = Annotated[str, POLICY_PATH]
router = APIRouter()


def _decide(
    service: PolicyService, metrics: ServiceMetrics, body: DecisionRequest, policy: str | None
) -> DecisionRecord:
    profile = body.profile_features.profile() if body.profile_features else None
    try:
        record = service.decide(
            body.user_id,
            body.context.moment(),
            body.candidate_tips(),
            profile,
            policy,
            body.event_id,
        )
    except UnknownCategory as exc:
        raise field_error(["candidates", exc.index, "category"], str(exc)) from None
    except DecisionConflict as exc:  # the event id names another request
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    metrics.decided(record)
    return record


def _response_fields(decision: PolicyDecision) -> dict[str, Any]:
    return {
        "policy": decision.policy,
        "tip_id": decision.tip_id,
        "propensity": decision.propensity,
        "scores": {c.tip_id: c.score for c in decision.candidates},
        "probabilities": {c.tip_id: c.probability for c in decision.candidates},
    }


@router.post("/serve", response_model=ServeResponse, tags=["decisions"])
def serve(body: DecisionRequest, service: Service, metrics: Metrics) -> ServeResponse:
    """The live policy chooses the tip to show; every shadow policy's would-be choice is logged
    with the decision (never served, never rewarded)."""
    record = _decide(service, metrics, body, None)
    shadows = {
        s.policy: ShadowChoice(
            tip_id=s.tip_id,
            propensity=s.propensity,
            probabilities={c.tip_id: c.probability for c in s.candidates},
        )
        for s in record.shadows
    }
    return ServeResponse(
        decision_id=record.id, shadows=shadows, **_response_fields(record.decision)
    )


@router.post("/score/{policy}", response_model=DecisionResponse, tags=["decisions"])
def score(
    body: DecisionRequest, service: Service, metrics: Metrics, policy: PolicyName
) -> DecisionResponse:
    """Decide with one named policy (whatever its role); the decision is logged as its own."""
    record = _decide(service, metrics, body, known_policy(policy))
    return DecisionResponse(decision_id=record.id, **_response_fields(record.decision))


_REWARD_ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"description": "no such decision"},
    409: {"description": "rewarded differently already, expired, or another policy's decision"},
}


def _reward(
    service: PolicyService, metrics: ServiceMetrics, body: RewardRequest, policy: str | None
) -> RewardResponse:
    reward = body.reward if body.reward is not None else reward_of(body.event, body.dwell_s)
    try:
        stored = service.reward(policy, body.decision_id, reward, body.event, body.dwell_s)
    except DecisionNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    except DecisionConflict as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    metrics.rewarded(stored)
    return RewardResponse(
        decision_id=body.decision_id,
        policy=stored.policy,
        reward=stored.reward.reward,
        event=stored.reward.event,
    )


@router.post(
    "/reward", response_model=RewardResponse, tags=["decisions"], responses=_REWARD_ANSWERS
)
def reward_decision(body: RewardRequest, service: Service, metrics: Metrics) -> RewardResponse:
    """Join the user's response to the decision (which knows its policy) and learn from it:
    the policy that decided and every shadow that scored the request learn, in one
    transaction, answered only once committed. A retry of the same reward answers the stored
    one; a different one is refused (409)."""
    return _reward(service, metrics, body, None)


@router.post(
    "/reward/{policy}", response_model=RewardResponse, tags=["decisions"], responses=_REWARD_ANSWERS
)
def reward(
    body: RewardRequest, service: Service, metrics: Metrics, policy: PolicyName
) -> RewardResponse:
    """As `POST /reward`, naming the policy that decided (another policy's decision: 409
    naming the one that made it)."""
    return _reward(service, metrics, body, known_policy(policy))


def _stats(service: PolicyService, policy: str) -> PolicyStatsResponse:
    stats = service.stats(policy)
    counts = stats.counts
    return PolicyStatsResponse(
        policy=policy,
        role=stats.role,  # type: ignore[arg-type]
        decisions=counts.decisions,
        rewards=counts.rewards,
        mean_reward=counts.mean_reward,
        shadow_decisions=counts.shadow_decisions,
        events=counts.events,
        features=list(FEATURE_NAMES[policy_spec(policy).features]),
        live=stats.roles.live,
        shadows=list(stats.roles.shadows),
        sources=source_stats(counts.sources),
    )


@router.get("/stats", response_model=ServiceStatsResponse, tags=["stats"])
def all_stats(service: Service) -> ServiceStatsResponse:
    """The roles in force, every policy's counts, and what was served of each source's tips."""
    roles = service.roles()
    return ServiceStatsResponse(
        live=roles.live,
        shadows=list(roles.shadows),
        policies={name: _stats(service, name) for name in POLICIES},
        sources=source_stats(service.store.source_counts()),
    )


@router.get("/stats/{policy}", response_model=PolicyStatsResponse, tags=["stats"])
def policy_stats(service: Service, policy: PolicyName) -> PolicyStatsResponse:
    """One policy's role, decisions, rewards and mean reward."""
    return _stats(service, known_policy(policy))


@router.get("/config", response_model=ConfigResponse, tags=["config"])
def get_config(service: Service) -> ConfigResponse:
    """The roles, each policy's settings, the reward window and the log's retention."""
    return ConfigResponse.model_validate(service.serving_config().model_dump())


def _score_alias(policy: str) -> Callable[..., DecisionResponse]:
    def score_alias(body: DecisionRequest, service: Service, metrics: Metrics) -> DecisionResponse:
        return score(body, service, metrics, policy)

    return score_alias


def _reward_alias(policy: str) -> Callable[..., RewardResponse]:
    def reward_alias(body: RewardRequest, service: Service, metrics: Metrics) -> RewardResponse:
        return reward(body, service, metrics, policy)

    return reward_alias


def _stats_alias(policy: str) -> Callable[..., PolicyStatsResponse]:
    def stats_alias(service: Service) -> PolicyStatsResponse:
        return policy_stats(service, policy)

    return stats_alias


def _add_original_paths() -> None:
    for path, policy in ORIGINAL_PATHS.items():
        for method, verb, endpoint, model in (
            ("POST", "score", _score_alias(policy), DecisionResponse),
            ("POST", "reward", _reward_alias(policy), RewardResponse),
            ("GET", "stats", _stats_alias(policy), PolicyStatsResponse),
        ):
            router.add_api_route(
                f"/{verb}/{path}",
                endpoint,
                methods=[method],
                response_model=model,
                tags=["original paths"],
                summary=f"Alias of /{verb}/{policy} (the original recommender's path)",
                operation_id=f"{verb}_{path.replace('/', '_')}",
            )


_add_original_paths()
