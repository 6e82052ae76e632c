"""The bundled model served by llama.cpp's own server on this machine takes the path tipbench
ships for its file, weighed at what a constrained token costs there, so its first collect
asks no probe (issue 46, item 3); a server whose file is not here is probed as before.

A scripted server (`support.openai_server`) answers as `llama-server` does: its models
`owned_by` "llamacpp", `GET /props` naming the file they are served from.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.openai_server import ScriptedOpenAI
from tipbench.backends._openai import LLAMA_SERVER_TOKEN_COST
from tipbench.collect import CollectConfig, collect
from tipbench.tracking import GENERATION_PATHS_TAG, decode_paths

pytestmark = pytest.mark.usefixtures("tipbench_home")


def first_collect(served_from: Path, uri: str, experiment: str) -> tuple[dict[str, object], int]:
    """A first collect of 2 cells from the model served from `served_from`: the path its
    parent run records, and the chat requests the server answered."""
    config = CollectConfig(
        models=["openai:smollm2@135M"], prompts=["v1"], n_scenarios=2, n_tips=2,
        experiment=experiment,
    )  # fmt: skip
    with ScriptedOpenAI({"smollm2": None}, served_from=served_from) as server:
        config = config.model_copy(update={"openai_base_url": server.url})
        result = collect(config, tracking_uri=uri)
        requests = len(server.requests)
    assert result.exit_code == 0
    tag = MlflowClient(uri).get_run(result.parent_run_id).data.tags[GENERATION_PATHS_TAG]
    (recorded,) = decode_paths(tag).values()
    return recorded, requests


def test_the_bundled_file_on_llama_server_takes_its_shipped_path_asking_no_probe(
    smollm2_path: Path, sqlite_uri: str, experiment: str
) -> None:
    recorded, requests = first_collect(smollm2_path, sqlite_uri, experiment)
    assert recorded["source"] == "shipped" and recorded["path"] == "schema"
    assert recorded["constrained_token_cost"] == LLAMA_SERVER_TOKEN_COST
    assert requests == 2  # the grid's two cells, nothing asked before them


def test_a_file_that_is_not_here_is_probed(
    tmp_path: Path, sqlite_uri: str, experiment: str
) -> None:
    recorded, requests = first_collect(tmp_path / "elsewhere.gguf", sqlite_uri, experiment)
    assert recorded["source"] == "probe"
    assert recorded["constrained_token_cost"] == LLAMA_SERVER_TOKEN_COST
    assert requests > 2
