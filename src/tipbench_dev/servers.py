"""Real servers for tests and benchmarks, started as subprocesses on loopback ephemeral ports.

Each is a context manager: entering starts the subprocess in its own session and waits until
it answers its health check; leaving stops the whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from tipbench.backends._aligned import BLOCK
from tipbench.backends._threads import THREADS_ENV, llama_threads
from tipbench.tracking import MLFLOW_WITHOUT_JOBS

#: The serving and admin tokens `PolicyServer` starts the policy service with.
POLICY_TOKEN = "policy-service-token-0123456789"
POLICY_ADMIN_TOKEN = "policy-admin-token-9876543210"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop_group(process: subprocess.Popen[bytes], term_s: float = 20.0) -> None:
    """End `process` and its whole group (it was started in a session of its own): SIGTERM,
    then SIGKILL after `term_s`, and SIGKILL again for anything that outlived the leader."""
    if process.poll() is None:
        for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


class ServerProcess:
    """A subprocess serving HTTP on 127.0.0.1; stopped with its whole process group."""

    health_path = "/"
    start_timeout_s = 90.0
    env: dict[str, str] | None = None
    """Variables set for the subprocess on top of this process's environment."""
    log_mode = "wb"  # "ab" keeps the log of an earlier start (a restart after a kill)

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = (self.workdir / "server.log").open(self.log_mode)
        self.process = subprocess.Popen(
            self.command(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
            env=None if self.env is None else {**os.environ, **self.env},
        )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.command()[:4]} exited: {self.log_text()[-2000:]}")
            if self.ready():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server did not start in time: {self.log_text()[-2000:]}")

    def ready(self) -> bool:
        """Whether the server answers its health check yet (asking for a key is an answer)."""
        try:
            with urllib.request.urlopen(self.url + self.health_path, timeout=2):
                return True
        except urllib.error.HTTPError as refused:
            return refused.code == 401
        except OSError:
            return False

    def log_text(self) -> str:
        return (self.workdir / "server.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if hasattr(self, "log"):
            self.log.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class MlflowServer(ServerProcess):
    """`mlflow server` with a SQLite store, proxying artifacts (`mlflow-artifacts:/`), without
    MLflow's server jobs (`MLFLOW_WITHOUT_JOBS`: their consumers slow models beside them)."""

    health_path = "/health"
    env = MLFLOW_WITHOUT_JOBS

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "mlflow", "server",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--backend-store-uri", f"sqlite:///{self.workdir / 'mlflow.db'}",
            "--artifacts-destination", str(self.workdir / "artifacts"),
            "--workers", "1",
        ]  # fmt: skip


class LlamaCppServer(ServerProcess):
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`)."""

    health_path = "/v1/models"
    #: What its log writes once per completion it answered (chat or legacy).
    completion_mark = '"POST /v1/'

    def __init__(
        self,
        workdir: Path,
        model_path: Path,
        alias: str = "smollm2",
        cpus: frozenset[int] | None = None,
    ) -> None:
        """`cpus`: run on these CPUs only, one thread each (else where and as it likes)."""
        super().__init__(workdir)
        self.model_path = model_path
        self.alias = alias
        self.cpus = cpus
        self.env = {"PYTHONUNBUFFERED": "1"}  # its log shows at once when a client hung up

    def command(self) -> list[str]:
        command = [
            sys.executable, "-m", "tipbench_dev.llama_server",
            "--model", str(self.model_path), "--model_alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048",
            "--n_batch", str(BLOCK),  # a fresh prompt is evaluated as the embedded backend does
        ]  # fmt: skip
        if self.cpus:
            threads = {"n_threads": len(self.cpus), "n_threads_batch": len(self.cpus)}
            command = ["taskset", "-c", ",".join(map(str, sorted(self.cpus))), *command]
        else:  # as the embedded backend runs: TIPBENCH_LLAMA_THREADS, if set
            threads = llama_threads()
        return [*command, *(arg for name, n in threads.items() for arg in (f"--{name}", str(n)))]

    def completions(self) -> int:
        """Completions answered so far (its log), once the count holds still: the line is
        written just after the response went out."""
        count = -1
        while (now := self.log_text().count(self.completion_mark)) != count:
            count = now
            time.sleep(0.3)
        return count


class ModelServer(LlamaCppServer):
    """`tipbench serve-model`: llama-cpp-python's server with the embedded backend's sampling
    (its grammar checked on a shortlist first) and threads; `cpus` as for `LlamaCppServer`
    (one thread each, through `TIPBENCH_LLAMA_THREADS`); with `api_key`, every route asks
    for it."""

    def __init__(
        self,
        workdir: Path,
        model_path: Path,
        alias: str = "smollm2",
        cpus: frozenset[int] | None = None,
        api_key: str | None = None,
    ) -> None:
        super().__init__(workdir, model_path, alias, cpus)
        threads = {THREADS_ENV: str(len(cpus))} if cpus else {}
        key = {"OPENAI_API_KEY": api_key} if api_key is not None else {}
        self.env = {"PYTHONUNBUFFERED": "1", **threads, **key}

    def command(self) -> list[str]:
        command = [
            sys.executable, "-m", "tipbench.cli", "serve-model",
            "--model", str(self.model_path), "--alias", self.alias, "--port", str(self.port),
        ]  # fmt: skip
        if self.cpus:
            command = ["taskset", "-c", ",".join(map(str, sorted(self.cpus))), *command]
        return command


class LlamaServer(LlamaCppServer):
    """llama.cpp's own OpenAI-compatible server (the C++ `llama-server` at `binary`), run as
    `LlamaCppServer` runs llama-cpp-python's: one slot, the same context, batch, buffers and
    threads (llama-cpp-python's defaults, half the CPUs for generation and all for prompts,
    unless `cpus` or TIPBENCH_LLAMA_THREADS say otherwise). It samples first and checks the
    grammar on the sampled token, where llama-cpp-python checks every token of the vocabulary.
    """

    completion_mark = "| processing task"  # a slot takes each completion as a task

    def __init__(
        self,
        workdir: Path,
        binary: Path,
        model_path: Path,
        alias: str = "smollm2",
        cpus: frozenset[int] | None = None,
    ) -> None:
        super().__init__(workdir, model_path, alias, cpus)
        self.binary = binary

    def command(self) -> list[str]:
        command = [
            str(self.binary), "--model", str(self.model_path), "--alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port), "--ctx-size", "2048",
            "--batch-size", str(BLOCK), "--ubatch-size", str(BLOCK), "--parallel", "1",
            "--no-webui", "--log-verbosity", "3",
            "--no-repack",  # no extra CPU buffers (AMX), as `plain_cpu_buffers` loads models
            "--flash-attn", "off",  # llama-cpp-python's default (on, tokens cost 1.2x here)
        ]  # fmt: skip
        cpus = os.cpu_count() or 1
        generation, prompts = max(cpus // 2, 1), cpus
        if self.cpus:
            generation = prompts = len(self.cpus)
            command = ["taskset", "-c", ",".join(map(str, sorted(self.cpus))), *command]
        elif threads := llama_threads():
            generation, prompts = threads["n_threads"], threads["n_threads_batch"]
        return [*command, "--threads", str(generation), "--threads-batch", str(prompts)]


class TipbenchServer(ServerProcess):
    """`tipbench serve` (the admin app and its job runner), configured by `env`."""

    health_path = "/login"  # the one route that answers without a token

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        super().__init__(workdir)
        self.env = env

    def command(self) -> list[str]:
        return [sys.executable, "-m", "tipbench.cli", "serve", "--port", str(self.port)]

    def rss_peak_kib(self) -> int:
        """The server process's peak resident memory so far (VmHWM), in KiB."""
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(
            next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]
        )


class PolicyServer(ServerProcess):
    """`tipbench policy serve` with the serving token `POLICY_TOKEN` (which `client()`
    carries) and the admin token `POLICY_ADMIN_TOKEN` (`admin_client()`); `env` adds to
    or overrides the variables it starts with."""

    start_timeout_s = 60.0
    log_mode = "ab"

    def __init__(
        self, workdir: Path, state_url: str, *options: str, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(workdir)
        self.state_url = state_url
        self.options = options
        self.env = {
            "TIPBENCH_POLICY_TOKEN": POLICY_TOKEN,
            "TIPBENCH_POLICY_ADMIN_TOKEN": POLICY_ADMIN_TOKEN,
            "TIPBENCH_HOME": str(workdir / "home"),
            **(env or {}),
        }

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

    def client(self, token: str | None = POLICY_TOKEN, timeout: float = 30.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def admin_client(self, timeout: float = 30.0) -> httpx.Client:
        return self.client(POLICY_ADMIN_TOKEN, timeout)
