"""A real Airflow for tests: `AirflowHome` (shared with the benchmarks, in
`tipbench._dev.airflow`) and `AirflowStandalone`, the whole of Airflow (`airflow standalone`)
on a loopback port for the REST API tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from tipbench._dev.airflow import AirflowHome, DagTestRun
from tipbench._dev.servers import free_port

__all__ = ["AirflowHome", "AirflowStandalone", "DagTestRun", "task_process"]


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
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, cwd=self.home.root, env=self.env(**extra_env),
        )  # fmt: skip
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
        if self.process is None or self.process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):  # workers that outlived the leader
            os.killpg(self.process.pid, signal.SIGKILL)


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
