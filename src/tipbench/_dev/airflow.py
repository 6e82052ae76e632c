"""A real Airflow for tests and benchmarks: a temporary AIRFLOW_HOME with tipbench's DAGs.

`AirflowHome` migrates a SQLite metadata database and installs the DAGs with `tipbench
airflow install-dags`; `dag_test` runs a DAG with `dag.test()` in a subprocess (so Airflow's
configuration and logging stay out of the caller's process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = str(Path(sys.executable).parent)  # `airflow` starts its components by name


@dataclass(frozen=True)
class DagTestRun:
    """What `dag.test()` did: the run's state, each task's state and return value."""

    state: str
    tasks: dict[str, str]
    xcoms: dict[str, Any]
    output: str  # the task logs

    def tasks_named(self, task_id: str) -> dict[str, str]:
        return {k: v for k, v in self.tasks.items() if k.split("[")[0] == task_id}


class AirflowHome:
    """A temporary AIRFLOW_HOME with a migrated SQLite database and tipbench's DAGs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "airflow"
        self.dags = root / "dags"

    def env(self, **extra: str) -> dict[str, str]:
        path = os.environ.get("PATH", "")
        return {
            **os.environ,
            "PATH": f"{BIN}:{path}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            **extra,
        }

    def setup(self) -> AirflowHome:
        self.home.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run(
            [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", str(self.dags)],
            capture_output=True, text=True, check=False, env=self.env(),
        )  # fmt: skip
        if installed.returncode != 0:
            raise RuntimeError(f"install-dags failed: {installed.stderr}")
        migrated = subprocess.run(
            ["airflow", "db", "migrate"], capture_output=True, text=True, env=self.env(),
            check=False, timeout=300,
        )  # fmt: skip
        if migrated.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed: {migrated.stderr[-2000:]}")
        return self

    def dag_test(self, dag_id: str, conf: dict[str, Any], **env: str) -> DagTestRun:
        """`dag.test(run_conf=conf)` of one of tipbench's DAGs, in a subprocess."""
        done = subprocess.run(
            [sys.executable, "-m", "tipbench._dev.dag_test", str(self.dags), dag_id,
             json.dumps(conf)],
            capture_output=True, text=True, env=self.env(**env), check=False, timeout=1800,
        )  # fmt: skip
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
            raise RuntimeError(f"dag.test failed ({done.returncode}): {done.stderr[-3000:]}")
        result = json.loads(lines[-1])
        return DagTestRun(result["state"], result["tasks"], result["xcoms"], done.stdout)
