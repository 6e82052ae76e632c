"""`tipbench policy serve` as a real subprocess on a loopback ephemeral port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from support.servers import ServerProcess

TOKEN = "policy-service-token-0123456789"


class PolicyServer(ServerProcess):
    """The policy service; `client()` carries the service token."""

    start_timeout_s = 60.0

    def __init__(self, workdir: Path, state_url: str, *options: str) -> None:
        super().__init__(workdir)
        self.state_url = state_url
        self.options = options
        self.env = {"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_HOME": str(workdir / "home")}

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "tipbench.cli", "policy", "serve",
            "--host", "127.0.0.1", "--port", str(self.port), "--state-url", self.state_url,
            *self.options,
        ]  # fmt: skip

    def start(self) -> PolicyServer:
        # The base class probes without a token; this one waits for an authenticated /ping.
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = (self.workdir / "server.log").open("ab")
        self.process = subprocess.Popen(
            self.command(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
            env={**os.environ, **(self.env or {})},
        )
        deadline = time.monotonic() + self.start_timeout_s
        with self.client() as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"policy serve exited: {self.log_text()[-2000:]}")
                try:
                    if client.get("/ping").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"policy serve did not start in time: {self.log_text()[-2000:]}")

    def client(self, token: str | None = TOKEN, timeout: float = 30.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
