"""Retries are safe: a decision request with the client's event id gets the same decision
however often it is sent (concurrently too), and a retried reward gets the stored one."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from support.policy_state import CANDIDATES, MOMENT, make_service
from tipbench.policy_service import (
    DecisionConflict,
    DuplicateDecision,
    DuplicateEvent,
    EventIdConflict,
    StateStore,
    check_roles,
    open_store,
)


def test_the_same_event_id_gets_the_same_decision(store: StateStore) -> None:
    svc = make_service(store)
    store.set_roles(check_roles("egreedy-v1", ["linucb"]))
    first = svc.decide("u1", MOMENT, CANDIDATES, event_id="req-1")
    again = svc.decide("u1", MOMENT, CANDIDATES, event_id="req-1")
    assert again == first and again.event_id == "req-1"
    other = svc.decide("u1", MOMENT, CANDIDATES, event_id="req-2")
    assert other.id != first.id
    assert [d.record.id for d in store.decisions()] == [first.id, other.id]
    assert store.counts("egreedy-v1").decisions == 2
    assert store.counts("linucb").shadow_decisions == 2

    scored = svc.decide("u1", MOMENT, CANDIDATES, policy="linucb", event_id="req-3")
    assert svc.decide("u1", MOMENT, CANDIDATES, policy="linucb", event_id="req-3") == scored


@pytest.mark.parametrize(
    "retry",
    [
        {"user_id": "u2"},
        {"moment": replace(MOMENT, local_hour=9)},
        {"candidates": CANDIDATES[:2]},
        {"policy": "linucb"},  # a /score with a /serve's id
    ],
)
def test_an_event_id_of_another_request_is_refused(store: StateStore, retry: dict) -> None:
    svc = make_service(store)
    first = svc.decide("u1", MOMENT, CANDIDATES, event_id="req-1")
    asked = {"user_id": "u1", "moment": MOMENT, "candidates": CANDIDATES, **retry}
    with pytest.raises(EventIdConflict, match=r"event_id 'req-1' was used for another request$"):
        svc.decide(event_id="req-1", **asked)
    assert len(list(store.decisions())) == 1
    assert first.id  # ... which the error never names: it is another request's


def test_a_decision_logged_twice_is_a_clear_error(store: StateStore) -> None:
    """Without an event id, a second insert of one decision raised StopIteration (every
    integrity error was taken for an event id's)."""
    svc = make_service(store)
    record = svc.decide("u1", MOMENT, CANDIDATES)
    with pytest.raises(DuplicateDecision, match=f"decision '{record.id}' is in the log already"):
        store.record_decision(record)
    fresh = replace(record, id="other", sequence=record.sequence + 1, event_id="req-9")
    store.record_decision(fresh)
    with pytest.raises(DuplicateEvent, match="event_id 'req-9' names a decision already"):
        store.record_decision(replace(fresh, id="third"))
    assert [d.record.id for d in store.decisions()] == [record.id, "other"]


def test_an_integrity_error_that_is_no_duplicate_stays_itself(store: StateStore) -> None:
    """A NOT NULL violation is not reported as a duplicate decision or event id."""
    record = make_service(store).decide("u1", MOMENT, CANDIDATES)
    broken = replace(record, id="new", user_id=None)  # type: ignore[arg-type]
    with pytest.raises(Exception) as raised:
        store.record_decision(broken)
    assert not isinstance(raised.value, DecisionConflict | StopIteration)
    assert "null" in str(raised.value).lower()
    assert [d.record.id for d in store.decisions()] == [record.id]


def test_concurrent_retries_make_one_decision(state_url: str) -> None:
    """Retries racing through two replicas: one decision, every caller gets it."""
    stores = [open_store(state_url) for _ in range(2)]
    try:
        services = [make_service(s) for s in stores]
        answers: list[str] = []
        errors: list[BaseException] = []

        def retry(i: int) -> None:
            try:
                record = services[i % 2].decide("u1", MOMENT, CANDIDATES, event_id="storm")
                answers.append(record.id)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=retry, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(set(answers)) == 1 and len(answers) == 8
        assert [d.record.id for d in stores[0].decisions()] == answers[:1]
        assert stores[0].counts("egreedy-v1").decisions == 1
    finally:
        for s in stores:
            s.close()
