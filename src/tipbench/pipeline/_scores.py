"""What follows newly written scores, wherever they come from (`judge apply`, the judging
page, `judge auto`): the experiment's "last update", its logged leaderboard, and whoever the
caller tells (Airflow: `orchestration.announce_judged`).

The pipeline does not import orchestration (orchestration runs the pipeline): a caller that
wants Airflow told passes the announcement in (`Announce`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tipbench.compare import Refresh, refresh_logged_leaderboard
from tipbench.tracking import TrackingStore, mark_updated

Announce = Callable[[str, str | None], str | None]
"""Tells whoever listens that complete scores were applied: called with the experiment's
name and its store's URI, it returns None when told (or when there is no one to tell), else a
one-line warning saying why not. `orchestration.announce_judged` tells Airflow."""


@dataclass(frozen=True)
class AfterScores:
    """What was done after scores were written; `warnings` are one line each."""

    leaderboard: Refresh | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def refreshed(self) -> str | None:
        """The logged leaderboard run that was rewritten, if one was."""
        board = self.leaderboard
        return board.run_id if board is not None and board.refreshed else None


def scores_written(
    store: TrackingStore,
    experiment: str,
    *,
    final: bool,
    announce: Announce | None = None,
    suite: str | Path | None = None,
) -> AfterScores:
    """Follow up scores written to `experiment`; never raises (each step is best effort).

    Always marks the experiment updated (the panel's "Last update" counts scores). When
    `final` (complete scores were recorded, not only drafts), refreshes the logged
    leaderboard if its figures changed (see `compare.refresh_logged_leaderboard`) and, with
    `announce` (e.g. `orchestration.announce_judged`), tells whoever listens.
    """
    with contextlib.suppress(Exception):  # the experiment exists: scores were just written
        mark_updated(store, store.experiment_id(experiment))
    if not final:
        return AfterScores()
    refresh = refresh_logged_leaderboard(store, experiment, suite=suite)
    warnings = [refresh.warning] if refresh.warning else []
    if announce is not None and (warning := announce(experiment, store.uri)):
        warnings.append(warning)
    return AfterScores(refresh, warnings)
