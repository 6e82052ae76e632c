"""A new SQLite store is copied from a template MLflow built, and is what MLflow would build."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

from mlflow import MlflowClient

from tipbench.tracking import TrackingStore, data_dir
from tipbench.tracking._new_store import TEMPLATES_DIR


def layout(path: Path) -> tuple[dict[str, list[str]], list[tuple[str, ...]]]:
    """A database's tables and indexes and its migration version. Each one's SQL as its
    sorted clauses: MLflow's migrations write a table's constraints in varying order."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        schema = {
            name: sorted(part.strip() for part in sql.split(","))
            for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE sql NOT NULL")
        }
        return schema, db.execute("SELECT * FROM alembic_version").fetchall()


def default_experiment(path: Path) -> tuple[str, int]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        location, created = db.execute(
            "SELECT artifact_location, creation_time FROM experiments WHERE experiment_id = 0"
        ).fetchone()
    return location, created


def test_a_new_store_is_the_store_mlflow_builds(tmp_path: Path) -> None:
    own = tmp_path / "own" / "mlflow.db"
    own.parent.mkdir()
    MlflowClient(f"sqlite:///{own}").search_experiments()  # MLflow's own, migration by migration
    seeded = tmp_path / "seeded" / "mlflow.db"
    before = int(time.time() * 1000)

    store = TrackingStore(f"sqlite:///{seeded}")
    experiment_id = store.experiment_id("tips", create=True)

    templates = list((data_dir() / TEMPLATES_DIR).iterdir())
    assert [t.suffix for t in templates] == [".db"]
    assert stat.S_IMODE((data_dir() / TEMPLATES_DIR).stat().st_mode) == 0o700
    assert stat.S_IMODE(templates[0].stat().st_mode) == 0o600
    assert layout(seeded) == layout(own)
    location, created = default_experiment(seeded)
    assert location == (seeded.parent / "mlartifacts" / "0").as_uri()
    assert created >= before
    assert stat.S_IMODE(seeded.stat().st_mode) == 0o600
    client = MlflowClient(f"sqlite:///{seeded}")
    run = client.create_run(experiment_id, run_name="cell")
    client.log_param(run.info.run_id, "model", "m")
    assert client.get_run(run.info.run_id).data.params == {"model": "m"}
    assert [e.name for e in client.search_experiments()] == ["tips", "Default"]


def test_the_template_is_built_once_and_stores_are_kept(tmp_path: Path) -> None:
    shutil.rmtree(data_dir() / TEMPLATES_DIR)  # a first collect's: the session's is not there
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    TrackingStore(f"sqlite:///{first}").experiment_id("tips", create=True)
    [template] = (data_dir() / TEMPLATES_DIR).iterdir()
    built = template.stat().st_mtime_ns

    TrackingStore(f"sqlite:///{second}").experiment_id("other", create=True)
    again = TrackingStore(f"sqlite:///{first}")  # a store that holds something is not new
    assert again.experiment_id("tips") == again.experiment_id("tips", create=True)

    assert template.stat().st_mtime_ns == built
    assert [e.name for e in MlflowClient(f"sqlite:///{first}").search_experiments()] == [
        "tips",
        "Default",
    ]
    assert "other" in [e.name for e in MlflowClient(f"sqlite:///{second}").search_experiments()]


def test_two_processes_opening_one_new_store_share_it(tmp_path: Path) -> None:
    database = tmp_path / "mlflow.db"
    script = (
        "import sys; from tipbench.tracking import TrackingStore;"
        f" print(TrackingStore('sqlite:///{database}').experiment_id(sys.argv[1], create=True))"
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", script, name], stdout=subprocess.PIPE, text=True)
        for name in ("one", "two")
    ]
    ids = [p.communicate(timeout=120)[0].strip() for p in processes]
    assert [p.returncode for p in processes] == [0, 0]
    names = {
        e.experiment_id: e.name for e in MlflowClient(f"sqlite:///{database}").search_experiments()
    }
    assert sorted(names[i] for i in ids) == ["one", "two"]


def test_without_a_usable_data_folder_mlflow_builds_the_store(
    tmp_path: Path, tipbench_home: Path
) -> None:
    shutil.rmtree(tipbench_home)
    tipbench_home.write_text("not a folder")
    database = tmp_path / "mlflow.db"

    experiment_id = TrackingStore(f"sqlite:///{database}").experiment_id("tips", create=True)

    assert MlflowClient(f"sqlite:///{database}").get_experiment(experiment_id).name == "tips"
