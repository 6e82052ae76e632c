"""A collect killed mid-grid (SIGKILL or Ctrl-C) resumes to exactly one run per cell."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tipbench.tracking import CELL_RUNS

pytestmark = pytest.mark.slow

ARGS = [
    "--prompts", "v1,v2-mentor", "--n-scenarios", "3", "--n-tips", "2", "--max-tokens", "80",
]  # fmt: skip


def start_collect(uri: str, experiment: str, home: Path) -> subprocess.Popen[str]:
    MlflowClient(uri).search_experiments()  # create the store first: the test polls it
    env = {**os.environ, "TIPBENCH_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "tipbench.cli", "collect", "--tracking-uri", uri,
         "--experiment", experiment, *ARGS],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def finished_cells(uri: str, experiment: str) -> list[str]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id], CELL_RUNS)
    return [r.data.tags["cell_key"] for r in runs if r.info.status == "FINISHED"]


def wait_for_cells(uri: str, experiment: str, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240
    while len(finished_cells(uri, experiment)) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.3)


def assert_one_run_per_cell(uri: str, experiment: str, cells: int) -> None:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], CELL_RUNS)
    assert len(runs) == cells
    assert all(r.info.status == "FINISHED" for r in runs)
    assert set(Counter(r.data.tags["cell_key"] for r in runs).values()) == {1}


def test_sigkill_then_resume(sqlite_uri: str, experiment: str, tipbench_home: Path) -> None:
    first = start_collect(sqlite_uri, experiment, tipbench_home)
    wait_for_cells(sqlite_uri, experiment, 2, first)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert first.returncode == -signal.SIGKILL
    recorded = len(finished_cells(sqlite_uri, experiment))
    assert 2 <= recorded < 6

    second = start_collect(sqlite_uri, experiment, tipbench_home)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert f"resuming: {recorded} of 6 cells already recorded" in err
    assert "6 cells:" in out
    assert_one_run_per_cell(sqlite_uri, experiment, 6)


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_stops_cleanly_and_resumes(
    sqlite_uri: str, experiment: str, tipbench_home: Path
) -> None:
    first = start_collect(sqlite_uri, experiment, tipbench_home)
    wait_for_cells(sqlite_uri, experiment, 1, first)
    os.killpg(first.pid, signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130
    assert "interrupted: re-run the same command to resume" in err
    assert "Traceback" not in err
    client = MlflowClient(sqlite_uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    (parent,) = client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'collection'")
    assert parent.info.status == "KILLED"

    second = start_collect(sqlite_uri, experiment, tipbench_home)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert_one_run_per_cell(sqlite_uri, experiment, 6)
    (parent,) = client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'collection'")
    assert parent.info.status == "FINISHED"  # the resumed collection reuses its parent run
