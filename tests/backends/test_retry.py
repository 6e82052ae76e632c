"""Bounded retries with growing delays, for transient backend failures only."""

from __future__ import annotations

import pytest

from tipbench import (
    BackendUnavailable,
    ConfigError,
    GenerationFailed,
    ModelNotFound,
    TransientError,
    UnusableOutput,
)
from tipbench.backends import RetryPolicy, call_with_retries


class Flaky:
    """Fails with the queued errors, one per call, then answers with the attempt number."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls: list[int] = []

    def __call__(self, attempt: int) -> str:
        self.calls.append(attempt)
        if self.errors:
            raise self.errors.pop(0)
        return f"answer on attempt {attempt}"


def test_transient_errors_are_retried_with_growing_delays() -> None:
    sleeps: list[float] = []
    fn = Flaky(BackendUnavailable("down"), GenerationFailed("HTTP 503"), GenerationFailed("500"))
    result, attempts = call_with_retries(fn, RetryPolicy(attempts=4, backoff_s=0.5), sleeps.append)

    assert (result, attempts) == ("answer on attempt 4", 4)
    assert fn.calls == [1, 2, 3, 4]
    assert len(sleeps) == 3
    assert sleeps == sorted(sleeps) and len(set(sleeps)) == 3
    # exponential backoff with at most 25% jitter: 0.5, 1, 2 seconds
    for delay, base in zip(sleeps, [0.5, 1.0, 2.0], strict=True):
        assert base <= delay <= base * 1.25


def test_an_unusable_answer_is_asked_again_at_once() -> None:
    # the server answered: waiting would not make the model's next answer any better
    sleeps: list[float] = []
    fn = Flaky(UnusableOutput("unparsable output: 'Sure!'"), BackendUnavailable("down"))
    result, attempts = call_with_retries(fn, RetryPolicy(attempts=3, backoff_s=0.5), sleeps.append)

    assert (result, attempts) == ("answer on attempt 3", 3)
    assert len(sleeps) == 1 and 1.0 <= sleeps[0] <= 1.25  # only the unavailable server waited


def test_delays_are_capped() -> None:
    policy = RetryPolicy(attempts=10, backoff_s=1.0, max_backoff_s=3.0)
    assert all(3.0 <= policy.delay(n) <= 3.75 for n in range(3, 10))


def test_the_last_transient_error_is_raised_when_attempts_run_out() -> None:
    sleeps: list[float] = []
    fn = Flaky(*(GenerationFailed(f"HTTP 503 #{i}") for i in range(1, 6)))
    with pytest.raises(GenerationFailed, match="#3"):
        call_with_retries(fn, RetryPolicy(attempts=3, backoff_s=0.01), sleeps.append)
    assert fn.calls == [1, 2, 3]
    assert len(sleeps) == 2  # no pointless wait after the last attempt


@pytest.mark.parametrize(
    "error",
    [ModelNotFound("no such model"), ConfigError("bad"), ValueError("bug"), KeyboardInterrupt()],
)
def test_other_errors_are_not_retried(error: BaseException) -> None:
    sleeps: list[float] = []
    fn = Flaky(error)
    with pytest.raises(type(error)):
        call_with_retries(fn, RetryPolicy(attempts=5), sleeps.append)
    assert fn.calls == [1]
    assert sleeps == []


def test_success_on_first_attempt_does_not_sleep() -> None:
    sleeps: list[float] = []
    assert call_with_retries(Flaky(), RetryPolicy(), sleeps.append) == ("answer on attempt 1", 1)
    assert sleeps == []


def test_a_single_attempt_policy_does_not_retry() -> None:
    fn = Flaky(TransientError("flaky"))
    with pytest.raises(TransientError):
        call_with_retries(fn, RetryPolicy(attempts=1), lambda _: None)
    assert fn.calls == [1]


@pytest.mark.parametrize(
    "kwargs", [{"attempts": 0}, {"attempts": -1}, {"backoff_s": -1.0}, {"max_backoff_s": -1.0}]
)
def test_a_policy_that_cannot_work_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="RetryPolicy"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
