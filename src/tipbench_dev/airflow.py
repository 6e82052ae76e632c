"""A real Airflow for tests and benchmarks: a temporary AIRFLOW_HOME with tipbench's DAGs.

`AirflowHome` migrates its metadata database (SQLite in the home, or a PostgreSQL database
given as a URL) and installs the DAGs with `tipbench airflow install-dags`; `dag_test` runs
a DAG with `dag.test()` in a subprocess (so Airflow's configuration and logging stay out of
the caller's process); `AirflowStandalone` runs the whole of Airflow (`airflow standalone`)
on a loopback port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipbench_dev.servers import free_port, stop_group

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


def metadata_database(url: str) -> dict[str, str]:
    """Airflow's settings for a PostgreSQL metadata database at `url` (`postgresql://…`),
    both through psycopg 3: Airflow derives the async URL from the sync one as
    `postgresql+asyncpg://…` unless it is given, and asyncpg is not one of its requirements."""
    rest = url.split("://", 1)[1]
    return {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg://{rest}",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": f"postgresql+psycopg://{rest}",
    }


class AirflowHome:
    """A temporary AIRFLOW_HOME with a migrated metadata database and tipbench's DAGs: a
    SQLite file in the home, or the PostgreSQL database at `database` (`postgresql://…`)."""

    def __init__(self, root: Path, database: str | None = None) -> None:
        self.root = root
        self.home = root / "airflow"
        self.dags = root / "dags"
        self.database = database

    def database_env(self) -> dict[str, str]:
        if self.database is not None:
            return metadata_database(self.database)
        return {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}"}

    def env(self, **extra: str) -> dict[str, str]:
        path = os.environ.get("PATH", "")
        return {
            **os.environ,
            "PATH": f"{BIN}:{path}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            **self.database_env(),
            **extra,
        }

    def setup(self) -> AirflowHome:
        self.home.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run(
            [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", str(self.dags)],
            capture_output=True,
            text=True,
            check=False,
            env=self.env(),
        )
        if installed.returncode != 0:
            raise RuntimeError(f"install-dags failed: {installed.stderr}")
        migrated = subprocess.run(
            ["airflow", "db", "migrate"],
            capture_output=True,
            text=True,
            env=self.env(),
            check=False,
            timeout=300,
        )
        if migrated.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed: {migrated.stderr[-2000:]}")
        return self

    def dag_test(self, dag_id: str, conf: dict[str, Any], **env: str) -> DagTestRun:
        """`dag.test(run_conf=conf)` of one of tipbench's DAGs, in a subprocess."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tipbench_dev.dag_test",
                str(self.dags),
                dag_id,
                json.dumps(conf),
            ],
            capture_output=True,
            text=True,
            env=self.env(**env),
            check=False,
            timeout=1800,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
            raise RuntimeError(f"dag.test failed ({done.returncode}): {done.stderr[-3000:]}")
        result = json.loads(lines[-1])
        return DagTestRun(result["state"], result["tasks"], result["xcoms"], done.stdout)


class AirflowStandalone:
    """A real `airflow standalone` (API server, scheduler, dag processor, triggerer,
    LocalExecutor, SQLite) on a loopback port, in its own process group.

    Stopping ends the whole group (TERM, then KILL): SIGTERM alone does not stop the
    scheduler's executor workers promptly.
    """

    start_timeout_s = 240.0

    def __init__(self, home: AirflowHome) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = home.root / "standalone.log"

    def env(self, **extra: str) -> dict[str, str]:
        return self.home.env(
            AIRFLOW__API__HOST="127.0.0.1",
            AIRFLOW__API__PORT=str(self.port),
            AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"{self.url}/execution/",
            AIRFLOW__CORE__PARALLELISM="2",
            AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="False",
            **extra,
        )

    def start(self, **extra_env: str) -> AirflowStandalone:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            ["airflow", "standalone"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.home.root,
            env=self.env(**extra_env),
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"airflow standalone exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=3):
                    if self.password_file.exists():
                        return self
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"airflow standalone did not start in time: {self.log_tail()}")

    @property
    def password_file(self) -> Path:
        return self.home.home / "simple_auth_manager_passwords.json.generated"

    def admin_password(self) -> str:
        password: str = json.loads(self.password_file.read_text())["admin"]
        return password

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_group(self.process)  # the executor's workers may outlive the leader


def task_process(ti_id: str) -> int | None:
    """The pid of the process running task instance `ti_id` (Airflow titles it
    `airflow worker -- <ti id>`), if there is one."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if f"airflow worker -- {ti_id}".encode() in cmdline:
            return int(entry.name)
    return None
