"""A real PostgreSQL cluster for tests and benchmarks: Debian's server, initialised in a
temporary folder and started on a loopback ephemeral port; stopped and removed afterwards.

PostgreSQL refuses to run as root, so as root the cluster is made and run by the `postgres`
user (which the Debian package creates), in a folder that user owns.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType

from tipbench_dev.servers import free_port

BIN = Path("/usr/lib/postgresql/15/bin")


def _bin_dir() -> Path:
    if BIN.is_dir():
        return BIN
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    return found[-1]


class PostgresCluster:
    """`initdb` + `pg_ctl start` on 127.0.0.1; `database()` makes a fresh database."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="tipbench-pg-"))
        self.data = self.dir / "data"
        self.user = "postgres"

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> PostgresCluster:
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        else:
            self.user = pwd.getpwuid(os.geteuid()).pw_name
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", self.user)
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start the server (again, after `stop_server`), on the same port and data."""
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w",
            "start",
        )  # fmt: skip

    def stop_server(self) -> None:
        """Stop the server, keeping its data (`start_server` brings it back)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop_server()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
