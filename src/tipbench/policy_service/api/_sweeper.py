"""The serving process's background sweep: decisions past the reward window expire, and with
a retention set, settled decisions older than it leave the log.

Every replica sweeps; they never collide (rows another replica holds are skipped) and a sweep
that finds the store unavailable just tries again at the next tick.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Self

from tipbench._errors import TipbenchError
from tipbench.policy_service._service import PolicyService

SWEEP_INTERVAL_S = 60.0
logger = logging.getLogger(__name__)


class Sweeper:
    """Runs `sweep()` every `interval_s` seconds in a daemon thread, from `start` to `stop`."""

    def __init__(self, service: PolicyService, interval_s: float = SWEEP_INTERVAL_S) -> None:
        self.service = service
        self.interval_s = interval_s
        self.expired = 0  # since start, for metrics
        self.pruned = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="policy-sweeper", daemon=True)

    def sweep(self) -> tuple[int, int]:
        """One sweep: (decisions expired, decisions pruned)."""
        expired = self.service.expire()
        pruned = 0
        if self.service.serving_config().retention_s is not None:
            pruned = self.service.prune()
        self.expired += expired
        self.pruned += pruned
        return expired, pruned

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except TipbenchError as exc:  # the store is unavailable: next tick
                logger.warning("policy sweep skipped: %s", exc)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
