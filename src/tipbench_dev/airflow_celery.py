"""Airflow on "several machines" for tests: the CeleryExecutor with Redis, a scheduler, a dag
processor, a triggerer, an API server and Celery workers that share nothing but the network.

The central components share one AIRFLOW_HOME and Airflow's metadata database, a PostgreSQL
database (reached through psycopg 3, the sync and the async URL alike). The API server
generates the admin's password into `simple_auth_manager_passwords.json.generated` in that
home, as it does in any deployment with the simple auth manager. Each worker has its own
working folder, dags folder (the shim written by `tipbench airflow install-dags`),
`AIRFLOW_HOME` (its own empty metadata database: a worker reaches Airflow through the
execution API only), `TIPBENCH_HOME`, caches and log server port, and names itself
(`TIPBENCH_WORKER_NAME`, Airflow's `hostname_callable`), so a task instance's hostname says
which worker ran it. Redis is Debian's `redis-server` on a loopback port, both Celery's
broker and its result backend. Everything runs in its own process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tipbench_dev.airflow import BIN, AirflowHome
from tipbench_dev.servers import ServerProcess, free_port, stop_group


def worker_name() -> str:
    """Airflow's `hostname_callable` for the test workers: the name they were given."""
    return os.environ.get("TIPBENCH_WORKER_NAME") or socket.getfqdn()


class RedisServer(ServerProcess):
    """Debian's `redis-server` on 127.0.0.1, nothing persisted."""

    def command(self) -> list[str]:
        return [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
        ]  # fmt: skip

    def ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class Component:
    """One Airflow process (`airflow scheduler`, `airflow celery worker`, …)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name, self.argv, self.env, self.cwd = name, argv, env, cwd
        self.log_path = cwd / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.cwd,
                env=self.env,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group (a machine that dies)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            stop_group(self.process)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


class CeleryDeployment:
    """The CeleryExecutor deployment, its metadata database the PostgreSQL database at
    `database` (`postgresql://…`); `workers` Celery workers of concurrency 1 each."""

    start_timeout_s = 240.0

    def __init__(self, root: Path, database: str, workers: int = 2, **env: str) -> None:
        self.root = root
        # the scheduler, dag processor, triggerer and API server
        self.central = AirflowHome(root / "central", database)
        self.redis = RedisServer(root / "redis")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_env = env
        self.secrets = {
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__CORE__FERNET_KEY": "",
        }
        self.worker_names = [f"worker-{n}" for n in range(1, workers + 1)]
        self.components: dict[str, Component] = {}
        self.install_output: dict[str, str] = {}  # what `install-dags` printed on each worker

    def common_env(self) -> dict[str, str]:
        broker = f"redis://127.0.0.1:{self.redis.port}"
        return {
            **self.secrets,
            "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CELERY__BROKER_URL": f"{broker}/0",
            "AIRFLOW__CELERY__RESULT_BACKEND": f"{broker}/1",
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": "1",
            "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            # a dead worker's task is found within seconds, not the default 5 minutes
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "20",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "tipbench_dev.airflow_celery.worker_name",
            **self.extra_env,
        }

    def central_env(self) -> dict[str, str]:
        return self.central.env(**self.common_env(), TIPBENCH_WORKER_NAME="central")

    @property
    def password_file(self) -> Path:
        """Where the API server wrote the admin's password (`{"admin": "…"}`)."""
        return self.central.home / "simple_auth_manager_passwords.json.generated"

    def admin_password(self) -> str:
        password: str = json.loads(self.password_file.read_text())["admin"]
        return password

    def worker_env(self, name: str) -> dict[str, str]:
        """A worker's environment: the network addresses, and its own folders only."""
        home = self.root / name
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AIRFLOW", "TIPBENCH_", "MLFLOW_", "XDG_"))
        }
        return {
            **inherited,
            **self.common_env(),
            "AIRFLOW_HOME": str(home / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow' / 'unused.db'}",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "TIPBENCH_HOME": str(home / "tipbench-home"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "TIPBENCH_WORKER_NAME": name,
        }

    def start(self) -> CeleryDeployment:
        self.redis.start()
        self.central.setup()
        central = self.central_env()
        for name, argv in (
            ("api-server", ["airflow", "api-server"]),
            ("scheduler", ["airflow", "scheduler"]),
            ("dag-processor", ["airflow", "dag-processor"]),
            ("triggerer", ["airflow", "triggerer"]),  # a waiting approval is deferred to it
        ):
            self.components[name] = Component(name, argv, central, self.central.root)
        for name in self.worker_names:
            env = self.worker_env(name)
            folder = self.root / name
            (folder / "airflow").mkdir(parents=True, exist_ok=True)
            installed = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tipbench.cli",
                    "airflow",
                    "install-dags",
                    env["AIRFLOW__CORE__DAGS_FOLDER"],
                ],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if installed.returncode != 0:
                raise RuntimeError(f"install-dags for {name} failed: {installed.stderr}")
            self.install_output[name] = installed.stdout + installed.stderr
            argv = [
                "airflow", "celery", "worker", "--concurrency", "1",
                "--celery-hostname", f"{name}@%h", "--without-mingle", "--without-gossip",
            ]  # fmt: skip
            self.components[name] = Component(name, argv, env, folder)
        for component in self.components.values():
            component.start()
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            dead = [c.name for c in self.components.values() if not c.alive()]
            if dead:
                raise RuntimeError(f"{dead[0]} exited: {self.components[dead[0]].log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=3):
                    if self.password_file.exists():
                        return
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise RuntimeError("the API server did not start in time")

    def kill_worker(self, name: str) -> None:
        self.components[name].kill()

    def log_tail(self) -> str:
        return "\n".join(f"== {c.name}\n{c.log_tail(1500)}" for c in self.components.values())

    def stop(self) -> None:
        for component in reversed(list(self.components.values())):
            component.stop()
        self.redis.stop()
