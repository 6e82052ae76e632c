"""The scripted world of `support.scripted_world`, per test or shared by a module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.ollama_server import FakeOllama
from support.scripted_world import scripted_world
from tipbench.tracking import private_dir
from tipbench.tracking._new_store import TEMPLATES_DIR


@pytest.fixture
def world() -> Iterator[FakeOllama]:
    with scripted_world() as fake:
        yield fake


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory, store_template: Path) -> Iterator[Path]:
    """A tipbench home for a module whose tests share one optimization (it takes a minute):
    set while the module's fixtures run it, as `tipbench_home` sets one per test."""
    home = tmp_path_factory.mktemp("module-home") / "tipbench-home"
    templates = private_dir(private_dir(home) / TEMPLATES_DIR)
    os.link(store_template, templates / store_template.name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIPBENCH_HOME", str(home))
        for variable in ("MLFLOW_TRACKING_URI", "OLLAMA_HOST", "OPENAI_BASE_URL"):
            patch.delenv(variable, raising=False)
        yield home
