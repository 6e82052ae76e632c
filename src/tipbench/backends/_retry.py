"""Bounded retries with exponential backoff for transient backend failures."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tipbench._errors import TransientError, UnusableOutput

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy needs at least one attempt, not {self.attempts}")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("RetryPolicy delays cannot be negative")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based), with jitter."""
        base: float = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return base * (1 + random.random() / 4)


def call_with_retries(
    fn: Callable[[int], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """Call `fn(attempt)` until it succeeds; return its result and the attempts it took.

    Only `TransientError` is retried, after a backoff unless the output was unusable (the
    server is fine: the next attempt asks again at once); the last one is raised when
    attempts run out.
    """
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn(attempt), attempt
        except TransientError as exc:
            if attempt == policy.attempts:
                raise
            if not isinstance(exc, UnusableOutput):
                sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover
