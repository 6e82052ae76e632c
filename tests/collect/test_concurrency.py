"""Collections at the same time into one experiment: exactly one run per cell, always.

Real `tipbench collect` processes with the embedded model, into a real SQLite store (an OS
file lock) and a real `mlflow server` (a lease held in MLflow); duplicates left in a store
by older versions are repaired by the next collection.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from support.cells import record_cells
from support.servers import MlflowServer
from tipbench._phase import SilentProgress
from tipbench.backends import ModelSpec
from tipbench.backends._threads import THREADS_ENV
from tipbench.collect import Cell, CellOutcome, CollectConfig
from tipbench.suite import load_suite
from tipbench.tracking import KIND_LOCK, KIND_TAG, TrackingStore, experiment_lock, holder_name

pytestmark = pytest.mark.slow

GRID = ["--prompts", "v1,v2-mentor", "--n-scenarios", "4", "--n-tips", "2",
        "--max-tokens", "80"]  # fmt: skip
CELLS = 8


@pytest.fixture(params=["sqlite", "server"])
def store_uri(request: pytest.FixtureRequest, sqlite_uri: str) -> str:
    if request.param == "sqlite":
        MlflowClient(sqlite_uri).search_experiments()  # create the store before the race
        return sqlite_uri
    server: MlflowServer = request.getfixturevalue("mlflow_server")
    return server.url


def start_collect(
    uri: str, experiment: str, home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A collect process with its own data folder: no response cache shared between them.
    Two of them run at once, on one core each (`backends/_threads.py`)."""
    env = {**os.environ, "TIPBENCH_HOME": str(home), THREADS_ENV: "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "tipbench.cli", "collect", "--tracking-uri", uri,
         "--experiment", experiment, *(args or GRID)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def runs_of(uri: str, experiment: str, kind: str) -> list[Run]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    return client.search_runs([exp.experiment_id], f"tags.`{KIND_TAG}` = '{kind}'")


def assert_one_run_per_cell(uri: str, experiment: str, cells: int) -> None:
    runs = runs_of(uri, experiment, "cell")
    assert len(runs) == cells
    assert all(r.info.status == "FINISHED" for r in runs)
    assert set(Counter(r.data.tags["cell_key"] for r in runs).values()) == {1}
    assert len(runs_of(uri, experiment, "collection")) == 1
    assert runs_of(uri, experiment, KIND_LOCK) == []  # the lock is gone with its holders


def test_two_concurrent_collects_record_one_run_per_cell(
    store_uri: str, experiment: str, tmp_path: Path
) -> None:
    both = [start_collect(store_uri, experiment, tmp_path / name) for name in ("a", "b")]
    results = [process.communicate(timeout=600) for process in both]
    for process, (_, err) in zip(both, results, strict=True):
        assert process.returncode == 0, err
    errors = [err for _, err in results]
    assert sum("waiting for the collection of" in err for err in errors) == 1, errors
    outs = sorted(out.splitlines()[0] for out, _ in results)
    assert outs == [
        f"{CELLS} cells: 0 already recorded, {CELLS} collected, 0 failed",
        f"{CELLS} cells: {CELLS} already recorded, 0 collected, 0 failed",
    ]
    assert_one_run_per_cell(store_uri, experiment, CELLS)


def test_a_collect_that_wakes_after_losing_its_lease_leaves_one_run_per_cell(
    mlflow_server: MlflowServer, experiment: str, tmp_path: Path
) -> None:
    """A task runner that outlived its Airflow worker, and the task's retry: two collects
    of the same cells at once on one MLflow server. The one holding the lease stalls
    (SIGSTOP) past the lease's lifetime, the other takes over and records cells; then the
    first wakes (SIGCONT) while the second still collects. Both run to the end: the first
    sees its lease lost before it records again, waits for the lock, and every cell has one
    run."""
    uri, ttl = mlflow_server.url, {"TIPBENCH_LOCK_TTL_S": "5"}
    both = [start_collect(uri, experiment, tmp_path / name, env=ttl) for name in ("a", "b")]

    def finished_cells() -> int:
        return sum(r.info.status == "FINISHED" for r in runs_of(uri, experiment, "cell"))

    def until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 300
        while not done():
            assert all(p.poll() is None for p in both), [p.communicate() for p in both]
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.3)

    until(lambda: finished_cells() >= 1, "a first cell")
    (lease,) = runs_of(uri, experiment, KIND_LOCK)
    holder_pid = int(lease.data.tags["lock_holder"].rsplit(" pid ", 1)[1])
    (first,) = [p for p in both if p.pid == holder_pid]
    (second,) = [p for p in both if p is not first]
    os.killpg(first.pid, signal.SIGSTOP)  # stalls, lease and all
    try:

        def taken_over() -> bool:
            leases = runs_of(uri, experiment, KIND_LOCK)
            return [r.data.tags["lock_holder"] for r in leases] == [f"{host} pid {second.pid}"]

        host = lease.data.tags["lock_holder"].rsplit(" pid ", 1)[0]
        until(taken_over, "the other collect to take the lease over")
        recorded = finished_cells()
        until(lambda: finished_cells() > recorded, "the other collect to record a cell")
    finally:
        os.killpg(first.pid, signal.SIGCONT)  # wakes while the other still collects
    assert second.poll() is None and finished_cells() < CELLS

    results = {p.pid: p.communicate(timeout=600) for p in both}
    for process in both:
        assert process.returncode == 0, results[process.pid][1]
    assert_one_run_per_cell(uri, experiment, CELLS)
    assert "lost the collect lock" in results[first.pid][1]


def test_a_killed_holder_releases_the_lock(store_uri: str, experiment: str, tmp_path: Path) -> None:
    first = start_collect(store_uri, experiment, tmp_path / "a")
    deadline = time.monotonic() + 240
    while not [r for r in runs_of(store_uri, experiment, "cell") if r.info.status == "FINISHED"]:
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.3)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()

    second = start_collect(store_uri, experiment, tmp_path / "b")
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert out.startswith(f"{CELLS} cells: ")
    assert_one_run_per_cell(store_uri, experiment, CELLS)


def test_a_lease_lives_while_it_beats_and_is_taken_over_when_it_stops(
    mlflow_server: MlflowServer, experiment: str
) -> None:
    store = TrackingStore(mlflow_server.url)
    experiment_id = store.experiment_id(experiment, create=True)
    order: list[str] = []
    held = threading.Event()

    def holder() -> None:
        with experiment_lock(store, experiment_id, "collect", ttl_s=1.0):
            held.set()
            time.sleep(3.0)  # three times the lease's lifetime: only its heartbeat keeps it
            order.append("first released")

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(60)
    waited: list[str] = []
    with experiment_lock(store, experiment_id, "collect", ttl_s=1.0, waiting=waited.append):
        order.append("second holds")
    thread.join()
    assert order == ["first released", "second holds"]
    assert len(waited) == 1 and waited[0].endswith(f" pid {os.getpid()}")

    # A lease whose holder stopped beating (another host: its process cannot be looked up)
    # is taken over once its heartbeat has not moved for the lease's lifetime.
    tags = {KIND_TAG: KIND_LOCK, "lock_scope": "collect", "lock_holder": "elsewhere pid 1",
            "lock_heartbeat": "7"}  # fmt: skip
    stale = store.client.create_run(experiment_id, tags=tags).info.run_id
    waited.clear()
    started = time.monotonic()
    with experiment_lock(store, experiment_id, "collect", ttl_s=1.5, waiting=waited.append):
        assert time.monotonic() - started >= 1.5
        leases = runs_of(mlflow_server.url, experiment, KIND_LOCK)
        assert [r.data.tags["lock_holder"] for r in leases] == [holder_name()]
        assert stale not in {r.info.run_id for r in leases}
    assert waited == ["elsewhere pid 1"]
    assert runs_of(mlflow_server.url, experiment, KIND_LOCK) == []


def test_duplicates_in_a_store_are_repaired_by_the_next_collect(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    grid = ["--prompts", "v1", "--n-scenarios", "2", "--n-tips", "1", "--max-tokens", "48"]
    first = start_collect(sqlite_uri, experiment, tmp_path / "a", *grid)
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    client = MlflowClient(sqlite_uri)
    [parent] = runs_of(sqlite_uri, experiment, "collection")
    cells = runs_of(sqlite_uri, experiment, "cell")
    experiment_id = parent.info.experiment_id

    # What two collections at once used to leave: a second parent run, and each cell twice
    # (the older copy of the first cell judged by a human, which must be the one kept).
    judged = cells[0].info.run_id
    client.log_metric(judged, "composite", 12.0)
    other_parent = client.create_run(experiment_id, tags=dict(parent.data.tags)).info.run_id
    client.set_terminated(other_parent)
    copies = []
    for cell in cells:
        tags = dict(cell.data.tags) | {"mlflow.parentRunId": other_parent}
        copy = client.create_run(experiment_id, tags=tags, run_name=cell.info.run_name)
        for key, value in cell.data.params.items():
            client.log_param(copy.info.run_id, key, value)
        client.set_terminated(copy.info.run_id)
        copies.append(copy.info.run_id)
    assert len(runs_of(sqlite_uri, experiment, "cell")) == 4

    again = start_collect(sqlite_uri, experiment, tmp_path / "a", *grid)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert "2 cells: 2 already recorded, 0 collected, 0 failed" in out
    assert (
        "repaired duplicates: 2 cells had more than one run; deleted 2 extra runs "
        "(kept the judged, else the newest)" in err
    )
    assert "repaired duplicates: merged 1 extra parent run into the first one" in err
    assert_one_run_per_cell(sqlite_uri, experiment, 2)
    kept = {r.info.run_id for r in runs_of(sqlite_uri, experiment, "cell")}
    assert kept == {judged, copies[1]}  # the judged one, and the newer copy of the other
    for run_id in kept:
        assert client.get_run(run_id).data.tags["mlflow.parentRunId"] == parent.info.run_id

    quiet = start_collect(sqlite_uri, experiment, tmp_path / "a", *grid)
    _, err = quiet.communicate(timeout=600)
    assert quiet.returncode == 0 and "repaired" not in err


def test_a_cell_generated_ahead_is_dropped_if_another_collect_recorded_it(
    sqlite_uri: str, experiment: str
) -> None:
    # Collect generates a new experiment's first cells before the store has answered; a
    # collection that started at the same moment may record them first. Its run is kept.
    from tipbench.collect._ledger import Ledger
    from tipbench.tracking import open_in_background

    [recorded] = record_cells(sqlite_uri, experiment, n_scenarios=1)
    suite = load_suite()
    cell = Cell(
        ModelSpec.parse("llamacpp:smollm2-135m"), "test", suite.prompt("v1"),
        suite.select_scenarios(1)[0], 2, 0.7, 42, 128, suite.label,
    )  # fmt: skip
    config = CollectConfig(models=[str(cell.model)], prompts=["v1"], experiment=experiment)
    ledger = Ledger(
        open_in_background(sqlite_uri), config, suite, [cell], SilentProgress(),
        ahead=True,
    )  # fmt: skip
    assert ledger.wants(cell)  # before the store answers, every cell is generated
    ledger.record(CellOutcome(cell, ("Generated ahead.", "Dropped."), "json", None, 0.5, 1))
    assert not ledger.wants(cell)
    result = ledger.open()
    ledger.close(interrupted=False)

    assert (result.total, result.skipped, result.succeeded, result.exit_code) == (1, 1, 0, 0)
    runs = runs_of(sqlite_uri, experiment, "cell")
    assert [r.info.run_id for r in runs] == [recorded]
    assert runs_of(sqlite_uri, experiment, KIND_LOCK) == []
