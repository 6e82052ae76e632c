"""`tipbench compare --tier online`: each (model, prompt) measured by what users did with its
tips, from the policy service's decision log, beside the experiment's rubric (its agreement).
Also the online evidence `tipbench promote --online-log/--online-state-url` passes to the
gate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from tipbench._errors import ConfigError
from tipbench.compare import leaderboards_for
from tipbench.online import (
    DecisionLog,
    TrackedRuns,
    agreement,
    online_document,
    online_evidence,
    online_tier,
    render_online,
    state_log,
)
from tipbench.policy_service import open_store
from tipbench.promote import OnlineEvidence
from tipbench.tracking import TrackingStore

ONLINE_FORMATS = ("table", "json")


@contextmanager
def decision_log(
    log_file: Path | None,
    state_url: str | None,
    options: tuple[str, str] = ("--decision-log", "--state-url"),
) -> Iterator[DecisionLog]:
    """The rows of a log file (a `policy log export`), else of the state at `state_url`
    (default: the default state), open while the block runs; `options` name the two.

    Raises:
        ConfigError: both are given, or no state is there.
    """
    from tipbench.evaluate import read_log

    if log_file is not None and state_url is not None:
        raise ConfigError(f"give {options[0]} or {options[1]}, not both")
    if log_file is not None:
        yield read_log(log_file)
        return
    store = open_store(state_url, create=False)
    try:
        yield state_log(store)
    finally:
        store.close()


def show_online_tier(
    store: TrackingStore,
    experiment: str,
    log_file: Path | None,
    state_url: str | None,
    fmt: str,
    min_scenarios: int,
) -> None:
    """Print the online tier of the decision log and the agreement of the experiment's judged
    tiers with it (provenance naming a run the store lacks is refused first).

    Raises:
        ConfigError: a format other than table or JSON; a bad log.
    """
    if fmt not in ONLINE_FORMATS:
        raise ConfigError(f"--tier online prints {' or '.join(ONLINE_FORMATS)}, not {fmt}")
    with decision_log(log_file, state_url) as log:
        tier = online_tier(log, runs=TrackedRuns(store))
    boards = leaderboards_for(store, experiment, ("human", "auto"), min_scenarios)
    agreements = [agreement(board, tier) for board in boards if board.rows]
    if fmt == "json":
        click.echo(json.dumps(online_document(tier, agreements)))
        return
    for line in render_online(tier, agreements):
        click.echo(line)


@contextmanager
def promotion_evidence(
    store: TrackingStore, log_file: Path | None, state_url: str | None
) -> Iterator[OnlineEvidence | None]:
    """Promote's online evidence from `--online-log` or `--online-state-url` (None: neither
    given, the gate decides without it)."""
    if log_file is None and state_url is None:
        yield None
        return
    with decision_log(log_file, state_url, ("--online-log", "--online-state-url")) as log:
        yield online_evidence(log, runs=TrackedRuns(store))
