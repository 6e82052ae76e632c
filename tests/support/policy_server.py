"""`tipbench policy serve` as a real subprocess on a loopback ephemeral port."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from support.servers import ServerProcess

TOKEN = "policy-service-token-0123456789"


class PolicyServer(ServerProcess):
    """The policy service; `client()` carries the service token."""

    start_timeout_s = 60.0
    log_mode = "ab"

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

    def ready(self) -> bool:
        # The health check needs the token, like every route of the service.
        try:
            with self.client(timeout=2) as client:
                return client.get("/ping").status_code == 200
        except httpx.TransportError:
            return False

    def client(self, token: str | None = TOKEN, timeout: float = 30.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
