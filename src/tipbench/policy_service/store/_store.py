"""The state store: one narrow interface over the decision log, the models, the profiles and
the serving config, with two implementations sharing their SQL (`_sql.py` and its bases):
`SqliteStore` (embedded, the default, one server process) and `PostgresStore` (replicas
sharing a database).

What the store guarantees, on both:

- a reward is one transaction: the decision is marked rewarded, the live policy's model and
  the model of every shadow that scored the request learn from it, the user's profile and the
  counters are updated. It is acknowledged only after the commit, so an acknowledged reward
  survives kill -9, and a failed one leaves nothing;
- nothing is read in one transaction and written in another: the rows a change touches are
  locked first, always in the order decisions, arms (sorted), user contributions, profiles,
  counters (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: `SELECT ... FOR UPDATE`), so concurrent
  rewards never overwrite each other and cannot deadlock;
- the models are sums over the log: deleting decisions (erasing a user, resetting a policy)
  subtracts what they taught in the same transaction; pruning old decisions folds what they
  taught into per-user sums first, so that a later erasure still takes it back;
- a store that cannot answer within its timeout raises `StoreUnavailable` (HTTP 503).

The errors:

    TipbenchError
    ├── DecisionNotFound        no decision has that id
    ├── StoreUnavailable        locked, busy or unreachable past the timeout (retry later)
    └── DecisionConflict        the request contradicts what the log holds (HTTP 409)
        ├── AlreadyRewarded         a different reward was recorded first
        │   └── DecisionExpired     no reward came in the reward window
        ├── WrongPolicy             another policy made that decision
        ├── DuplicateDecision       a decision with that id is in the log already
        └── EventIdConflict         the client's event id names another request
            └── DuplicateEvent          raised by the store: the event id is taken
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from tipbench._errors import TipbenchError
from tipbench.policies import ArmStats, ProfileStats
from tipbench.policy_service.store._config import ConfigDocument
from tipbench.policy_service.store._records import (
    DecisionRecord,
    LoggedDecision,
    PolicyCounts,
    ResetScope,
    Rewarded,
    RewardRecord,
    Roles,
)

STORE_TIMEOUT_S = 2.0  # a statement or a lock wait longer than this answers 503


class DecisionNotFound(TipbenchError):
    """No decision has that id."""


class StoreUnavailable(TipbenchError):
    """The store cannot answer now: stopped, unreachable, or locked past its timeout. The
    request may be retried (the HTTP API answers 503); the server recovers by itself."""


class DecisionConflict(TipbenchError):
    """The request contradicts what the decision log holds."""


class AlreadyRewarded(DecisionConflict):
    """The decision has a different reward already; a second one changes nothing."""


class DecisionExpired(AlreadyRewarded):
    """The decision's reward window passed: it was settled without a response."""


class WrongPolicy(DecisionConflict):
    """The decision was made by another policy than the one named."""

    def __init__(self, decision_id: str, policy: str, named: str) -> None:
        super().__init__(
            f"decision {decision_id!r} was made by {policy!r}, not {named!r}: "
            f"reward it at /reward/{policy} (or /reward)"
        )
        self.policy = policy


class DuplicateDecision(DecisionConflict):
    """A decision is logged once: its id is in the log already (a caller's bug)."""

    def __init__(self, decision_id: str) -> None:
        super().__init__(f"decision {decision_id!r} is in the log already: it is logged once")
        self.decision_id = decision_id


class EventIdConflict(DecisionConflict):
    """The client's event id was used for a different request."""


class DuplicateEvent(EventIdConflict):
    """Raised by the store when a decision's event id is taken (a concurrent retry)."""

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event_id {event_id!r} names a decision already")
        self.event_id = event_id


class Cursor(Protocol):
    """What the shared SQL needs of a DB-API cursor (sqlite3 and psycopg both fit)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class StateStore(ABC):
    """Where decisions, rewards, models, profiles and the serving config persist."""

    @abstractmethod
    def next_sequence(self) -> int:
        """The next decision's sequence number (the draw of a seeded policy depends on it)."""

    @abstractmethod
    def config(self) -> ConfigDocument:
        """The stored (partial) serving config; `{}` before anything was set."""

    @abstractmethod
    def update_config(
        self, change: Callable[[ConfigDocument], ConfigDocument]
    ) -> tuple[ConfigDocument, ConfigDocument]:
        """Replace the stored config by `change(stored)` in one transaction (concurrent
        changes apply one after the other); returns (before, after). `change` may raise to
        leave it as it was."""

    @abstractmethod
    def arms(self, policies: Iterable[str]) -> dict[str, dict[str, ArmStats]]:
        """Every stored model of these policies: policy → category → statistics."""

    @abstractmethod
    def profile(self, user_id: str) -> ProfileStats:
        """The user's profile statistics (a new user's are all zero)."""

    @abstractmethod
    def record_decisions(self, records: Sequence[DecisionRecord]) -> None:
        """Log decisions with their shadows, in one transaction.

        Raises:
            DuplicateEvent: a record's event id names a logged decision (nothing is logged).
            DuplicateDecision: a record's decision id is logged already (nothing is logged).
        """

    def record_decision(self, record: DecisionRecord) -> None:
        self.record_decisions([record])

    @abstractmethod
    def decision(self, decision_id: str) -> LoggedDecision | None:
        """One logged decision, with its reward."""

    @abstractmethod
    def decision_for_event(self, event_id: str) -> LoggedDecision | None:
        """The decision made for a client's event id, if any."""

    @abstractmethod
    def record_reward(
        self, decision_id: str, reward: RewardRecord, policy: str | None = None
    ) -> Rewarded:
        """Join a reward to its decision, and learn from it (the deciding policy and every
        shadow that scored the request), in one transaction; returns the stored reward and
        the policy that decided. A retry of the same reward changes nothing and returns the
        stored one.

        Raises:
            DecisionNotFound: no decision has that id.
            WrongPolicy: `policy` is given and another policy made the decision.
            AlreadyRewarded: the decision has a different reward (`DecisionExpired`: it
                expired); nothing is changed.
        """

    @abstractmethod
    def expire(self, before: str, default_reward: float | None, now: str, limit: int) -> int:
        """Settle up to `limit` unrewarded decisions made before `before` as expired (learning
        `default_reward`, unless None); returns how many."""

    @abstractmethod
    def prune(self, before: str, limit: int) -> int:
        """Delete up to `limit` settled decisions made before `before` from the log (what they
        taught stays in the models, and in per-user sums); returns how many."""

    @abstractmethod
    def counts(self, policy: str) -> PolicyCounts:
        """What the policy decided and was rewarded since the last reset, for `/stats`."""

    @abstractmethod
    def source_counts(self, policy: str | None = None) -> dict[str, PolicyCounts]:
        """What the policy (None: every policy) served of each source's tips and was rewarded
        for since the last reset, by source (`TipSource.key`), for `/stats`."""

    @abstractmethod
    def reset(self, scope: ResetScope, policy: str | None, user_id: str | None) -> None:
        """Forget everything, one policy's models and decisions, or one user (their profile,
        decisions and everything those taught the models). The serving config stays."""

    @abstractmethod
    def decisions(self) -> Iterator[LoggedDecision]:
        """The decision log in sequence order, rewards joined."""

    @abstractmethod
    def check(self, timeout_s: float) -> None:
        """The readiness probe: returns once every table could be read and written within
        `timeout_s` (nothing is written), else raises `StoreUnavailable`."""

    @abstractmethod
    def close(self) -> None: ...

    def roles(self) -> Roles | None:
        """The stored live/shadow roles (None before any were set)."""
        stored = self.config()
        if "live" not in stored:
            return None
        return Roles(live=stored["live"], shadows=tuple(stored.get("shadows") or ()))

    def set_roles(self, roles: Roles, *, only_if_unset: bool = False) -> Roles:
        """Store the roles (all replicas see them at once); returns the roles in force."""
        change = {"live": roles.live, "shadows": list(roles.shadows)}

        def merged(stored: ConfigDocument) -> ConfigDocument:
            if only_if_unset and "live" in stored:
                return stored
            return {**stored, **change}

        self.update_config(merged)
        stored = self.roles()
        assert stored is not None
        return stored
