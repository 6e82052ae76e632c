"""The policy service: decisions, rewards, expiry, stats, resets and the serving config over one
state store.

The HTTP app, the CLI and tests call this; it holds no state of its own (replicas sharing a
PostgreSQL store behave as one service): the roles and every policy's settings are read from
the store for each decision, so a change holds at once for every replica.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from tipbench._errors import ConfigError, TipbenchError
from tipbench.policies import (
    ArmStats,
    Moment,
    PolicyConfig,
    PolicySpec,
    Profile,
    ProfileStats,
    draw,
    features,
    policy_spec,
)
from tipbench.policies import decide as choose
from tipbench.policy_service.store._config import (
    DEFAULT_LIVE,
    ConfigDocument,
    ServingConfig,
    describe_change,
    merge,
    resolve,
)
from tipbench.policy_service.store._records import (
    CandidateTip,
    DecisionRecord,
    Event,
    PolicyCounts,
    PolicyDecision,
    ResetScope,
    Rewarded,
    RewardRecord,
    Roles,
    Route,
    ScoredCandidate,
)
from tipbench.policy_service.store._store import DuplicateEvent, EventIdConflict, StateStore
from tipbench.suite import Catalogue

__all__ = ["DEFAULT_LIVE", "PolicyService", "PolicyStats", "Seeding", "UnknownCategory"]

logger = logging.getLogger(__name__)
SETTLE_PAGE = 500  # decisions expired or pruned per transaction


class UnknownCategory(TipbenchError):
    """A candidate names a category the catalogue does not have."""

    def __init__(self, index: int, category: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown category {category!r} (known: {', '.join(known)})")
        self.index = index


@dataclass(frozen=True)
class PolicyStats:
    policy: str
    role: str
    counts: PolicyCounts
    roles: Roles


@dataclass(frozen=True)
class Seeding:
    """What a starting server's flags did to the state's config."""

    seeded: bool  # the state had no roles: the flags set them
    config: ServingConfig  # in force now
    changed: list[str]  # what the flags changed (seeding an empty state, or --reconfigure)
    ignored: list[str]  # what the flags given would have changed, kept without --reconfigure


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def check_roles(live: str, shadows: Sequence[str]) -> Roles:
    """Roles from names, refused (`ConfigError`) if a name is unknown, repeated, or both live
    and shadow: the serving config's own checks."""
    try:
        config = ServingConfig(live=live, shadows=tuple(shadows))
    except ValidationError as exc:
        raise ConfigError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    return Roles(live=config.live, shadows=config.shadows)


class PolicyService:
    """Chooses tips with the configured policies and learns from rewards, through a store.

    `config` is the settings of a policy the state has none for; `clock` stamps decisions and
    `new_id` names them (random by default: a decision's id also draws its fold in the
    evaluation's cross-fitting, so a replay that must give the same evaluation passes its own).
    """

    def __init__(
        self,
        store: StateStore,
        catalogue: Catalogue,
        config: PolicyConfig | None = None,
        clock: Callable[[], str] = utc_now,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.store = store
        self.catalogue = catalogue
        self.config = config or PolicyConfig()
        self.clock = clock
        self.new_id = new_id

    # -- the serving config ---------------------------------------------------------------

    def serving_config(self) -> ServingConfig:
        """The config in force now (stored, so every replica sees a change at once)."""
        return resolve(self.store.config(), self.config)

    def roles(self) -> Roles:
        config = self.serving_config()
        return Roles(live=config.live, shadows=config.shadows)

    def configure(self, change: Mapping[str, Any]) -> ServingConfig:
        """Apply a partial change (`PUT /config`): what it names changes, the rest is kept.

        Raises:
            pydantic.ValidationError: the result is invalid (nothing is written).
        """

        def merged(stored: ConfigDocument) -> ConfigDocument:
            document = merge(stored, change)
            resolve(document, self.config)
            return document

        before, after = self.store.update_config(merged)
        old, new = resolve(before, self.config), resolve(after, self.config)
        changes = describe_change(old, new)
        if changes:
            logger.warning("policy config changed: %s", "; ".join(changes))
        return new

    def set_roles(self, roles: Roles) -> Roles:
        config = self.configure({"live": roles.live, "shadows": list(roles.shadows)})
        return Roles(config.live, config.shadows)

    def seed(
        self, flags: ConfigDocument, given: ConfigDocument, *, reconfigure: bool = False
    ) -> Seeding:
        """Fill what the state's config lacks from a starting server's `flags` (all of
        them, defaults included); with `reconfigure`, the flags `given` on the command line
        replace the stored values too."""

        def merged(stored: ConfigDocument) -> ConfigDocument:
            document = merge(flags, stored)
            if reconfigure:
                document = merge(document, given)
            resolve(document, self.config)
            return document

        before, after = self.store.update_config(merged)
        old, new = resolve(before, self.config), resolve(after, self.config)
        ignored = [] if reconfigure else describe_change(new, resolve(merge(after, given)))
        return Seeding("live" not in before, new, describe_change(old, new), ignored)

    # -- decisions ------------------------------------------------------------------------

    def check_candidates(self, candidates: Sequence[CandidateTip]) -> None:
        """Raises `UnknownCategory` for the first candidate outside the catalogue."""
        known = self.catalogue.category_ids
        for index, candidate in enumerate(candidates):
            if candidate.category not in known:
                raise UnknownCategory(index, candidate.category, known)

    def decide(
        self,
        user_id: str,
        moment: Moment,
        candidates: Sequence[CandidateTip],
        profile: Profile | None = None,
        policy: str | None = None,
        event_id: str | None = None,
    ) -> DecisionRecord:
        """Decide with `policy` (`/score`), or with the live policy and every shadow (`/serve`).

        `profile` overrides the user's stored profile for the v2 features. With the client's
        `event_id`, a retry of the request gets the decision made the first time.

        Raises:
            EventIdConflict: `event_id` names a decision made for another request.
        """
        self.check_candidates(candidates)
        route: Route = "score" if policy is not None else "serve"
        if event_id is not None:
            earlier = self._earlier(event_id, user_id, route, moment, candidates, policy)
            if earlier is not None:
                return earlier
        config = self.serving_config()
        names = [policy] if policy is not None else [config.live, *config.shadows]
        specs = [policy_spec(name) for name in names]
        sequence = self.store.next_sequence()
        arms = self.store.arms(names)
        if profile is None:  # v1-only decisions do not read the profile
            needs = any(spec.features == "v2" for spec in specs)
            stats = self.store.profile(user_id) if needs else ProfileStats()
            profile = Profile.from_stats(stats)
        # the tips' sources are kept once, with the deciding policy's choice
        decisions = [
            self._decide(
                spec,
                config,
                moment,
                profile,
                candidates,
                arms[spec.name],
                sequence,
                sources=index == 0,
            )
            for index, spec in enumerate(specs)
        ]
        record = DecisionRecord(
            id=self.new_id(),
            sequence=sequence,
            created_at=self.clock(),
            user_id=user_id,
            route=route,
            moment=moment,
            decision=decisions[0],
            shadows=tuple(decisions[1:]),
            event_id=event_id,
        )
        try:
            self.store.record_decision(record)
        except DuplicateEvent:  # a concurrent retry logged it first
            earlier = self._earlier(
                record.event_id or "", user_id, route, moment, candidates, policy
            )
            if earlier is None:
                raise
            return earlier
        return record

    def _earlier(
        self,
        event_id: str,
        user_id: str,
        route: Route,
        moment: Moment,
        candidates: Sequence[CandidateTip],
        policy: str | None,
    ) -> DecisionRecord | None:
        """The decision logged for `event_id`, if the request is the same one."""
        logged = self.store.decision_for_event(event_id)
        if logged is None:
            return None
        earlier = logged.record
        asked = [(c.tip_id, c.category, c.source) for c in candidates]
        answered = [(c.tip_id, c.category, c.source) for c in earlier.decision.candidates]
        same = (earlier.user_id, earlier.route, earlier.moment, answered) == (
            user_id,
            route,
            moment,
            asked,
        ) and (policy is None or earlier.decision.policy == policy)
        if not same:
            # Never the other request's decision id: whoever reuses an event id (a client's
            # bug, or someone guessing ids) must not learn another user's decision.
            raise EventIdConflict(f"event_id {event_id!r} was used for another request")
        return earlier

    def _decide(
        self,
        spec: PolicySpec,
        config: ServingConfig,
        moment: Moment,
        profile: Profile,
        candidates: Sequence[CandidateTip],
        arms: dict[str, ArmStats],
        sequence: int,
        *,
        sources: bool = True,
    ) -> PolicyDecision:
        settings = config.settings(spec.name)
        x = features(spec.features, moment, profile)
        u = draw(settings.seed, spec.name, sequence)
        choice = choose(spec, settings, x, [c.category for c in candidates], arms, u)
        scored = tuple(
            ScoredCandidate(c.tip_id, c.category, s, p, c.source if sources else None)
            for c, s, p in zip(candidates, choice.scores, choice.probabilities, strict=True)
        )
        return PolicyDecision(
            policy=spec.name,
            feature_version=spec.features,
            features=tuple(float(v) for v in x),
            candidates=scored,
            tip_id=candidates[choice.index].tip_id,
            propensity=choice.propensity,
            settings=settings,
        )

    # -- rewards and settling -------------------------------------------------------------

    def reward(
        self,
        policy: str | None,
        decision_id: str,
        reward: float,
        event: Event,
        dwell_s: float | None,
    ) -> Rewarded:
        """Learn from a reward (`policy` None: whichever policy decided); a retry of the same
        reward returns the stored one. Raises `DecisionNotFound`, `WrongPolicy` or
        `AlreadyRewarded` (nothing changed)."""
        if policy is not None:
            policy_spec(policy)
        record = RewardRecord(reward=reward, event=event, dwell_s=dwell_s, rewarded_at=self.clock())
        return self.store.record_reward(decision_id, record, policy)

    def expire(self) -> int:
        """Settle every decision past the reward window as expired; returns how many."""
        config = self.serving_config()
        if config.reward_window_s is None:
            return 0
        now = self.clock()
        before = _earlier_by(now, config.reward_window_s)
        return _in_pages(lambda: self.store.expire(before, config.default_reward, now, SETTLE_PAGE))

    def prune(self, retention_s: float | None = None) -> int:
        """Delete settled decisions older than `retention_s` (default: the configured
        retention) from the log; returns how many. Pending decisions stay.

        Raises:
            ConfigError: no retention given or configured.
        """
        retention_s = retention_s or self.serving_config().retention_s
        if retention_s is None:
            raise ConfigError(
                "no retention: pass --older-than, or set retention_s with PUT /config"
            )
        before = _earlier_by(self.clock(), retention_s)
        return _in_pages(lambda: self.store.prune(before, SETTLE_PAGE))

    # -- stats and resets -----------------------------------------------------------------

    def stats(self, policy: str) -> PolicyStats:
        policy_spec(policy)
        roles = self.roles()
        return PolicyStats(policy, roles.role(policy), self.store.counts(policy), roles)

    def reset(self, scope: ResetScope, policy: str | None, user_id: str | None) -> None:
        if scope == "policy":
            if policy is None:
                raise ConfigError("policy: a policy reset names the policy")
            policy_spec(policy)
        if scope == "user" and not user_id:
            raise ConfigError("user_id: a user reset names the user")
        self.store.reset(scope, policy, user_id)


def _earlier_by(now: str, seconds: float) -> str:
    moment = datetime.fromisoformat(now) - timedelta(seconds=seconds)
    return moment.isoformat(timespec="microseconds")


def _in_pages(step: Callable[[], int]) -> int:
    total = 0
    while True:
        done = step()
        total += done
        if done < SETTLE_PAGE:
            return total
