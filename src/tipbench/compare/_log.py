"""Logging a leaderboard to its experiment in MLflow, beside the cell runs it ranks, and
keeping the latest one up to date when scores change.

A logged leaderboard carries a digest of its figures (`FIGURES_TAG`): when scores are
applied, `refresh_logged_leaderboard` ranks the experiment again and, if the figures
changed, rewrites the latest leaderboard run in place (its artifacts, tags, and its metrics
at the next step, so MLflow keeps their history). A refresh that fails marks the run
`stale=true` instead, so nobody reads it as current.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tipbench.compare._build import leaderboards_for
from tipbench.compare._leaderboard import (
    BOARD_TIERS,
    DEFAULT_MIN_SCENARIOS,
    BoardTier,
    Leaderboard,
)
from tipbench.compare._plot import plot_leaderboards
from tipbench.compare._render import to_csv, to_json, to_markdown
from tipbench.tracking import (
    KIND_TAG,
    RunRecord,
    TrackingStore,
    log_texts,
    metric_name,
    record_run,
    short_error,
)

if TYPE_CHECKING:
    from mlflow.entities import Run

KIND_LEADERBOARD = "leaderboard"
PLOT_FILE = "leaderboard.png"
MIN_SCENARIOS_TAG = "min_scenarios"
FIGURES_TAG = "figures_digest"
VERSION_TAG = "leaderboard_version"
CHART_TAG = "chart"
REFRESHED_AT_TAG = "refreshed_at"
STALE_TAG = "stale"

_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def _metric(tier: BoardTier, name: str) -> str:
    """`leader_composite` (human), `auto_leader_composite`, `combined_leader_composite`."""
    return f"combined_{name}" if tier == "combined" else metric_name(tier, name)


def _summary(boards: Sequence[Leaderboard]) -> tuple[dict[str, str], dict[str, float]]:
    """Tags and metrics that let MLflow's UI show what the leaderboard says."""
    tags: dict[str, str] = {
        KIND_TAG: KIND_LEADERBOARD,
        "tier": boards[0].tier if len(boards) == 1 else "both",
        "experiment": boards[0].experiment,
        MIN_SCENARIOS_TAG: str(boards[0].min_scenarios),
        FIGURES_TAG: figures_digest(boards),
    }
    metrics: dict[str, float] = {}
    for board in boards:
        metrics[_metric(board.tier, "judged_runs")] = board.n_runs
        metrics[_metric(board.tier, "ranked_cells")] = len(board.ranked)
        leader = board.leader
        if leader is not None:
            tags[f"{board.tier}_leader"] = leader.name
            tags[f"{board.tier}_first"] = ", ".join(row.name for row in board.first)
            metrics[_metric(board.tier, "leader_composite")] = leader.composite
            metrics[_metric(board.tier, "leader_ci_low")] = leader.interval.low
            metrics[_metric(board.tier, "leader_ci_high")] = leader.interval.high
    return tags, metrics


def _artifacts(boards: Sequence[Leaderboard]) -> dict[str, str]:
    return {
        "leaderboard.json": to_json(boards),
        "leaderboard.md": to_markdown(boards),
        "leaderboard.csv": to_csv(boards),
    }


def figures_digest(boards: Sequence[Leaderboard]) -> str:
    """A digest of everything the leaderboards say but the time they were computed."""

    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: timeless(v) for k, v in value.items() if k != "generated_at"}
        if isinstance(value, list):
            return [timeless(v) for v in value]
        return value

    document = timeless(json.loads(to_json(boards)))
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def log_leaderboard(
    store: TrackingStore,
    experiment_id: str,
    boards: Sequence[Leaderboard],
    plot: Path | None = None,
) -> str:
    """Record leaderboards as one MLflow run of their experiment; return its run id.

    The run is tagged `tipbench.kind=leaderboard` and `tier` (`human`, `auto` or `both`),
    with the leader of each tier as a tag, its composite and interval as metrics
    (`leader_composite`, `auto_leader_composite`, …), and the leaderboard as artifacts:
    `leaderboard.json` (exactly what `compare --format json` prints), `.md`, `.csv` and the
    chart as `leaderboard.png` if one was drawn. A failed write removes the half-written run.

    Raises:
        TrackingError: If the store cannot be written.
        ValueError: If `boards` is empty.
    """
    if not boards:
        raise ValueError("no leaderboard to log")
    tags, metrics = _summary(boards)
    tags[VERSION_TAG] = "1"
    if plot is not None:
        tags[CHART_TAG] = "true"
    record = RunRecord(
        run_name=f"leaderboard {tags['tier']}",
        params={},
        tags=tags,
        metrics=metrics,
        artifacts=_artifacts(boards),
        files={PLOT_FILE: plot} if plot is not None else {},
    )
    return record_run(store, experiment_id, record, "the leaderboard")


@dataclass(frozen=True)
class Refresh:
    """What `refresh_logged_leaderboard` did.

    Attributes:
        run_id: The latest logged leaderboard of the experiment; None if none was logged.
        refreshed: Its figures had changed and were rewritten.
        warning: Why it could not be refreshed (it is then marked stale, if the store
            allows), in one line.
    """

    run_id: str | None
    refreshed: bool = False
    warning: str | None = None


def _lock(uri: str, experiment: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((uri, experiment), threading.Lock())


def latest_leaderboard_run(store: TrackingStore, experiment_id: str) -> Run | None:
    """The experiment's most recently logged leaderboard run (None if there is none)."""
    runs = store.client.search_runs(
        [experiment_id],
        f"tags.`{KIND_TAG}` = '{KIND_LEADERBOARD}' AND attributes.status = 'FINISHED'",
        max_results=1,
        order_by=["attributes.start_time DESC"],
    )
    return runs[0] if runs else None


def refresh_logged_leaderboard(
    store: TrackingStore, experiment: str, *, suite: str | Path | None = None
) -> Refresh:
    """Bring the experiment's latest logged leaderboard up to date with its scores.

    Ranks both tiers again (with the logged run's `min_scenarios`); if the figures differ
    from the logged ones, rewrites that run in place: the artifacts (and the chart, if it
    had one), the tags, and the metrics at the next step (`leaderboard_version`). Nothing
    is written when the figures are the same. Never raises: a refresh that fails marks the
    run `stale=true` and says why in `warning`. Refreshes of one experiment in one process
    run one at a time.
    """
    run_id = None
    try:
        experiment_id = store.experiment_id(experiment)
        with _lock(store.uri, experiment):
            run = latest_leaderboard_run(store, experiment_id)
            if run is None:
                return Refresh(None)
            run_id = run.info.run_id
            return Refresh(run_id, _rewrite(store, run, experiment, suite))
    except Exception as exc:
        if run_id is None:
            return Refresh(
                None, warning=f"the logged leaderboard was not checked: {short_error(exc)}"
            )
        warning = (
            f"the logged leaderboard (run {run_id}) could not be refreshed: {short_error(exc)}"
        )
        try:
            store.client.set_tag(run_id, STALE_TAG, "true")
        except Exception:
            return Refresh(run_id, warning=f"{warning}; nor marked stale")
        return Refresh(run_id, warning=f"{warning}; it is marked stale")


def _rewrite(store: TrackingStore, run: Run, experiment: str, suite: str | Path | None) -> bool:
    """Rewrite `run` with the experiment's leaderboards now, if they changed."""
    from mlflow.entities import Metric, RunTag

    old = run.data.tags
    min_scenarios = int(old.get(MIN_SCENARIOS_TAG) or DEFAULT_MIN_SCENARIOS)
    boards = leaderboards_for(store, experiment, BOARD_TIERS, min_scenarios, suite=suite)
    judged = [board for board in boards if board.rows]
    if not judged:
        return False
    tags, metrics = _summary(judged)
    if tags[FIGURES_TAG] == old.get(FIGURES_TAG) and STALE_TAG not in old:
        return False
    version = int(old.get(VERSION_TAG) or 1) + 1
    tags[VERSION_TAG] = str(version)
    tags[REFRESHED_AT_TAG] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run_id, client, now = run.info.run_id, store.client, int(time.time() * 1000)
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        chart = {}
        if old.get(CHART_TAG) == "true":
            chart[PLOT_FILE] = plot_leaderboards(judged, Path(tmp) / PLOT_FILE)
            tags[CHART_TAG] = "true"
        log_texts(client, run_id, _artifacts(judged), chart)
    client.log_batch(
        run_id,
        metrics=[Metric(k, float(v), now, version) for k, v in metrics.items()],
        tags=[RunTag(k, v) for k, v in tags.items()],
    )
    for gone in {k for k in old if k.endswith(("_leader", "_first"))} - set(tags):
        client.delete_tag(run_id, gone)  # a tier that has no leader any more
    if STALE_TAG in old:
        client.delete_tag(run_id, STALE_TAG)
    client.update_run(run_id, name=f"leaderboard {tags['tier']}")
    return True
