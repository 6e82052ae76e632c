"""Reading a SQLite MLflow store without MLflow gives what MLflow's own search gives."""

from __future__ import annotations

import math
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from tipbench.tracking import TrackingStore
from tipbench.tracking._sql_reader import StoredRun, open_reader


def make_store(uri: str) -> tuple[MlflowClient, str]:
    """An experiment with runs of every shape the reader must read like MLflow does."""
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("tip-bench-reader")
    other = client.create_experiment("tip-bench-other")
    for index in range(12):
        run = client.create_run(experiment_id if index < 10 else other, run_name=f"run-{index}")
        run_id = run.info.run_id
        tags = {"tipbench.kind": "cell" if index % 4 else "leaderboard", "note": "it's 'quoted'"}
        tags["cell_status"] = "ok" if index % 3 else "failed"
        metrics = [
            Metric("composite", float(index), 1000, 0),
            Metric("composite", index + 0.5, 2000, 1),  # the latest value is read
            Metric("nan_metric", math.nan, 1000, 0),
        ]
        client.log_batch(
            run_id,
            metrics=metrics,
            params=[Param("model", f"m{index % 2}"), Param("prompt_version", f"v{index % 3}")],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        if index % 2:
            client.set_terminated(run_id, "FINISHED")
        if index == 5:
            client.delete_run(run_id)  # deleted runs are not found
        time.sleep(0.002)  # distinct start times, as real runs have
    return client, experiment_id


def same(found: list[StoredRun], runs: list) -> None:  # type: ignore[type-arg]
    assert [run.run_id for run in found] == [run.info.run_id for run in runs]
    for stored, run in zip(found, runs, strict=True):
        assert stored.name == run.info.run_name and stored.status == run.info.status
        assert dict(stored.params) == run.data.params and dict(stored.tags) == run.data.tags
        assert stored.metrics.keys() == run.data.metrics.keys()
        for key, value in run.data.metrics.items():
            read = stored.metrics[key]
            assert read == value or (math.isnan(value) and math.isnan(read))


@pytest.mark.parametrize(
    ("tags", "params", "status", "mlflow_filter"),
    [
        ({}, {}, None, ""),
        ({"tipbench.kind": "cell"}, {}, None, "tags.`tipbench.kind` = 'cell'"),
        (
            {"tipbench.kind": "cell", "cell_status": "ok"},
            {"prompt_version": "v1"},
            "FINISHED",
            "tags.`tipbench.kind` = 'cell' AND tags.cell_status = 'ok'"
            " AND params.prompt_version = 'v1' AND attributes.status = 'FINISHED'",
        ),
        ({"note": "it's 'quoted'"}, {}, None, "tags.note = \"it's 'quoted'\""),
    ],
)
def test_the_reader_finds_what_mlflow_finds(
    sqlite_uri: str,
    tags: dict[str, str],
    params: dict[str, str],
    status: str | None,
    mlflow_filter: str,
) -> None:
    client, experiment_id = make_store(sqlite_uri)
    reader = open_reader(sqlite_uri)
    assert reader is not None
    runs = client.search_runs([experiment_id], mlflow_filter, max_results=1000)
    assert runs, "the case selects some runs"
    same(reader.runs(experiment_id, tags, params, status), list(runs))
    # the store finds the same through its reader and through MLflow (as for a server)
    store = TrackingStore(sqlite_uri)
    same(store.find(experiment_id, tags, params, status=status), list(runs))
    store._reader = None
    same(store.find(experiment_id, tags, params, status=status), list(runs))
    assert reader.experiment_id("tip-bench-reader") == experiment_id
    assert reader.experiment_id("nope") is None


def test_a_deleted_experiment_is_not_found(sqlite_uri: str) -> None:
    client, experiment_id = make_store(sqlite_uri)
    client.delete_experiment(experiment_id)
    reader = open_reader(sqlite_uri)
    assert reader is not None and reader.experiment_id("tip-bench-reader") is None


def test_a_database_of_another_layout_is_left_to_mlflow(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (id TEXT)")
    assert open_reader(f"sqlite:///{path}") is None
    assert open_reader("postgresql://localhost/mlflow") is None
    assert open_reader(f"sqlite:///{tmp_path / 'new.db'}") is None  # MLflow creates it


def test_compare_on_a_sqlite_store_does_not_import_mlflow(sqlite_uri: str) -> None:
    make_store(sqlite_uri)
    code = (
        "import sys\n"
        "from tipbench.tracking import TrackingStore\n"
        "from tipbench.compare import leaderboards_for\n"
        f"store = TrackingStore({sqlite_uri!r})\n"
        "leaderboards_for(store, 'tip-bench-reader', ('human', 'auto'), 3)\n"
        "print('mlflow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
