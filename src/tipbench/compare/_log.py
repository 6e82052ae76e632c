"""Logging a leaderboard to its experiment in MLflow, beside the cell runs it ranks."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tipbench._errors import TrackingError
from tipbench.compare._leaderboard import Leaderboard
from tipbench.compare._render import to_csv, to_json, to_markdown
from tipbench.tracking import KIND_TAG, TrackingStore, metric_name, short_error

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
    from mlflow.entities import Metric, RunTag

    if not boards:
        raise ValueError("no leaderboard to log")
    tags, metrics = _summary(boards)
    now = int(time.time() * 1000)
    client = store.client
    run_id: str | None = None
    try:
        name = f"leaderboard {tags['tier']}"
        run_id = str(client.create_run(experiment_id, start_time=now, run_name=name).info.run_id)
        client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
            folder = Path(tmp)
            (folder / "leaderboard.json").write_text(to_json(boards), encoding="utf-8")
            (folder / "leaderboard.md").write_text(to_markdown(boards), encoding="utf-8")
            (folder / "leaderboard.csv").write_text(to_csv(boards), encoding="utf-8")
            if plot is not None:
                shutil.copyfile(plot, folder / PLOT_FILE)
            client.log_artifacts(run_id, tmp)
        client.set_terminated(run_id, "FINISHED", end_time=int(time.time() * 1000))
    except Exception as exc:
        if run_id is not None:
            with contextlib.suppress(Exception):
                client.delete_run(run_id)
        raise TrackingError(
            f"cannot log the leaderboard to {store.uri}: {short_error(exc)}"
        ) from None
    return run_id
