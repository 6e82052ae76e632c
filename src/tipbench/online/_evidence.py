"""The online tier's readers and what it hands to promote: a state store's log read as rows
(as often as the tier asks), and promote's online evidence (`promote.OnlineEvidence`), the
candidate's tips against production's from a decision log."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tipbench._errors import ConfigError
from tipbench.evaluate import MIN_DECISIONS, MIN_ESS
from tipbench.online._runs import TrackedRuns
from tipbench.online._tier import DecisionLog, RunCheck, compare_sources
from tipbench.policy_service import StateStore, decision_rows, open_store
from tipbench.promote import OnlineComparison, OnlineEvidence
from tipbench.tracking import TrackingStore


class StateLog:
    """A state store's decision log as rows, read afresh each time it is iterated."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return decision_rows(self.store)


def state_log(store: StateStore) -> StateLog:
    return StateLog(store)


def online_evidence(
    log: DecisionLog,
    *,
    runs: RunCheck | None = None,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
) -> OnlineEvidence:
    """What promote's online condition asks of `log`: the candidate's source against
    production's, paired by decision (`compare_sources`), read when it is asked."""

    def answer(candidate: str, production: str) -> OnlineComparison:
        found = compare_sources(
            log, candidate, production, runs=runs, min_decisions=min_decisions, min_ess=min_ess
        )
        return OnlineComparison(
            candidate, production, found.difference, found.decisions, found.reason
        )

    return answer


@contextmanager
def served_state(state_url: str | None = None) -> Iterator[StateStore | None]:
    """The policy service's state at `state_url` (None: the default state), open while the
    block runs; None where no state is there (nothing was served)."""
    try:
        store = open_store(state_url, create=False)
    except ConfigError:
        yield None
        return
    try:
        yield store
    finally:
        store.close()


@contextmanager
def state_evidence(
    tracking: TrackingStore, state_url: str | None = None
) -> Iterator[OnlineEvidence | None]:
    """Promote's online evidence from the policy service's state (None: no state, so the gate
    decides without it), the tips' runs checked against `tracking`: what `bench_judged` and
    the admin panel pass to promote."""
    with served_state(state_url) as store:
        yield (
            None if store is None else online_evidence(state_log(store), runs=TrackedRuns(tracking))
        )
