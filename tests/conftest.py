"""Shared fixtures: an isolated tipbench home per test, and real servers on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests import `support.*`

from support.servers import LlamaCppServer, MlflowServer
from tipbench.tracking import private_dir
from tipbench.tracking._new_store import TEMPLATES_DIR

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


@pytest.fixture(scope="session")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store template of MLflow's version (`tracking/_new_store.py`), built once."""
    folder = tmp_path_factory.mktemp("store-templates")
    build = "import sys, pathlib; from tipbench.tracking._new_store import build_template as b;"
    build += " print(b(pathlib.Path(sys.argv[1])))"  # in a process of its own: MLflow stays out
    done = subprocess.run(
        [sys.executable, "-c", build, str(folder)], capture_output=True, text=True, check=True
    )
    return Path(done.stdout.splitlines()[-1])  # the last line: whatever MLflow prints first


@pytest.fixture(autouse=True)
def tipbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_template: Path) -> Path:
    """Each test gets its own data folder (store, cache) and no inherited server settings.

    The folder holds the session's store template, as a user's does after a first collect:
    a test's new store is a copy, not a second or more of MLflow's migrations.
    """
    home = tmp_path / "tipbench-home"
    templates = private_dir(private_dir(home) / TEMPLATES_DIR)
    os.link(store_template, templates / store_template.name)
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
