"""Shared fixtures: an isolated tipbench home per test, and real servers on loopback."""

from __future__ import annotations

import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests import `support.*`

from support.servers import LlamaCppServer, MlflowServer

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def tipbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own data folder (store, cache) and no inherited server settings."""
    home = tmp_path / "tipbench-home"
    monkeypatch.setenv("TIPBENCH_HOME", str(home))
    for name in ("MLFLOW_TRACKING_URI", "OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt in this process and in those the test starts,
    also when the suite itself runs in the background: a shell without job control starts
    background commands with SIGINT ignored, and their children inherit that."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def sqlite_uri(tmp_path: Path) -> str:
    """A fresh MLflow SQLite store."""
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A real `mlflow server` subprocess with proxied artifacts, shared by the session."""
    with MlflowServer(tmp_path_factory.mktemp("mlflow-server")) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def experiment() -> str:
    """A unique experiment name, so tests can share one MLflow server."""
    return f"tip-bench-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    from tipbench.backends._llamacpp import resolve_model_path

    return resolve_model_path("smollm2-135m")


@pytest.fixture(scope="session")
def llama_server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_path: Path
) -> Iterator[LlamaCppServer]:
    """llama-cpp-python's OpenAI-compatible server serving SmolLM2 as `smollm2`."""
    with LlamaCppServer(tmp_path_factory.mktemp("llama-server"), smollm2_path) as server:
        yield server  # type: ignore[misc]
