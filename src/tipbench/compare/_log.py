"""Logging a leaderboard to its experiment in MLflow, beside the cell runs it ranks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tipbench.compare._leaderboard import Leaderboard
from tipbench.compare._render import to_csv, to_json, to_markdown
from tipbench.tracking import KIND_TAG, RunRecord, TrackingStore, metric_name, record_run

KIND_LEADERBOARD = "leaderboard"
PLOT_FILE = "leaderboard.png"


def _summary(boards: Sequence[Leaderboard]) -> tuple[dict[str, str], dict[str, float]]:
    """Tags and metrics that let MLflow's UI show what the leaderboard says."""
    tags: dict[str, str] = {
        KIND_TAG: KIND_LEADERBOARD,
        "tier": boards[0].tier if len(boards) == 1 else "both",
        "experiment": boards[0].experiment,
    }
    metrics: dict[str, float] = {}
    for board in boards:
        metrics[metric_name(board.tier, "judged_runs")] = board.n_runs
        metrics[metric_name(board.tier, "ranked_cells")] = len(board.ranked)
        leader = board.leader
        if leader is not None:
            tags[f"{board.tier}_leader"] = leader.name
            metrics[metric_name(board.tier, "leader_composite")] = leader.composite
            metrics[metric_name(board.tier, "leader_ci_low")] = leader.ci_low
            metrics[metric_name(board.tier, "leader_ci_high")] = leader.ci_high
    return tags, metrics


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
    record = RunRecord(
        run_name=f"leaderboard {tags['tier']}",
        params={},
        tags=tags,
        metrics=metrics,
        artifacts={
            "leaderboard.json": to_json(boards),
            "leaderboard.md": to_markdown(boards),
            "leaderboard.csv": to_csv(boards),
        },
        files={PLOT_FILE: plot} if plot is not None else {},
    )
    return record_run(store, experiment_id, record, "the leaderboard")
