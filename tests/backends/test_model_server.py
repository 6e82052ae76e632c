"""`tipbench serve-model`, a real subprocess serving the bundled SmolLM2: what a client of it
sees (its answers, its cost of a constrained token, its file, its key) and what a collect
through it asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import mlflow
import pytest

from support.cli import assert_one_line_error, tipbench
from support.servers import LlamaCppServer
from tipbench import GenerationFailed
from tipbench.backends import BackendOptions, GenerationRequest, ModelSpec, open_backend
from tipbench.backends._llamacpp import LlamaCppBackend
from tipbench.backends._model_server import generation_threads
from tipbench.backends._threads import ThreadChoice
from tipbench.collect import CollectConfig, collect, tips_schema
from tipbench.suite import load_suite
from tipbench.tracking import GENERATION_PATHS_TAG, decode_paths
from tipbench_dev.servers import ModelServer

SMOLLM2 = ModelSpec.parse("openai:smollm2")
KEY = "model-server-key-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, smollm2_path: Path) -> Iterator[ModelServer]:
    """`tipbench serve-model` of the bundled model."""
    with ModelServer(tmp_path_factory.mktemp("serve-model"), smollm2_path) as server:
        yield server


@pytest.fixture
def model_server(served: ModelServer) -> str:
    return f"{served.url}/v1"


def tips_request(seed: int) -> GenerationRequest:
    suite = load_suite()
    return GenerationRequest(
        messages=suite.prompt("v2-mentor").render(suite.select_scenarios(2)[1], 3),
        temperature=0.7,
        seed=seed,
        max_tokens=160,
        json_schema=tips_schema(3),
    )


@pytest.mark.slow
def test_it_names_its_model_its_size_and_the_embedded_cost(
    model_server: str, smollm2_path: Path
) -> None:
    with open_backend(SMOLLM2, BackendOptions(openai_base_url=model_server)) as backend:
        info = backend.describe()
        assert info.parameter_count is not None and 1e8 < info.parameter_count < 2e8
        assert backend.model_file == smollm2_path  # from /props: the shipped path applies
        assert backend.constrained_token_cost == LlamaCppBackend.constrained_token_cost


@pytest.mark.slow
def test_its_constrained_answers_are_the_plain_servers(
    model_server: str, llama_server: LlamaCppServer
) -> None:
    """The grammar checked on a shortlist first samples the tokens the whole check samples:
    the same schema requests get the same answers from llama_cpp.server as it is."""
    shortlisted = open_backend(SMOLLM2, BackendOptions(openai_base_url=model_server))
    plain = open_backend(SMOLLM2, BackendOptions(openai_base_url=f"{llama_server.url}/v1"))
    with shortlisted, plain:
        for seed in (42, 43, 44):
            answer = shortlisted.generate(tips_request(seed))
            assert answer.structured and answer.completion_tokens > 10
            assert answer.text == plain.generate(tips_request(seed)).text


@pytest.mark.slow
def test_a_collect_through_it_takes_the_shipped_path_with_no_probe_or_print(
    served: ModelServer,
    model_server: str,
    sqlite_uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TIPBENCH_HOME", str(tmp_path / "home"))  # nothing remembered
    config = CollectConfig(
        models=["openai:smollm2"],
        prompts=["v1"],
        n_scenarios=2,
        n_tips=3,
        openai_base_url=model_server,
    )
    result = collect(config, tracking_uri=sqlite_uri)
    assert result.exit_code == 0, result.failed
    parent = mlflow.MlflowClient(sqlite_uri).get_run(result.parent_run_id)
    (recorded,) = decode_paths(parent.data.tags[GENERATION_PATHS_TAG]).values()
    assert recorded["source"] == "shipped"
    assert recorded["constrained_token_cost"] == LlamaCppBackend.constrained_token_cost
    served.completions()  # its log holds every answer
    assert '"POST /v1/completions' not in served.log_text()  # no print asked


@pytest.mark.slow
def test_with_a_key_every_route_asks_for_it(tmp_path: Path, smollm2_path: Path) -> None:
    with ModelServer(tmp_path / "keyed", smollm2_path, api_key=KEY) as server:
        for path in ("/v1/models", "/props"):
            assert httpx.get(server.url + path).status_code == 401
        answer = httpx.get(server.url + "/props", headers={"Authorization": f"Bearer {KEY}"})
        assert answer.json()["model_path"] == str(smollm2_path)
        with pytest.raises(GenerationFailed, match="list models failed with HTTP 401"):
            open_backend(SMOLLM2, BackendOptions(openai_base_url=f"{server.url}/v1")).describe()
    assert KEY not in server.log_text()


def test_serving_beyond_loopback_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = tipbench("serve-model", "--host", "0.0.0.0", timeout=60)
    assert_one_line_error(result, "--host 0.0.0.0", "OPENAI_API_KEY")


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nosuch.gguf"
    result = tipbench("serve-model", "--model", str(missing), timeout=60)
    assert_one_line_error(result, str(missing), "no such file")


@pytest.mark.parametrize(
    ("choice", "generating"),
    [
        (ThreadChoice(2, "machine", 2, 0.0, 2), 1),
        (ThreadChoice(1, "machine", 2, 1.0, 1), 1),
        (ThreadChoice(8, "machine", 8, 0.0, 8), 4),
        (ThreadChoice(2, "variable", chosen=2), 2),  # TIPBENCH_LLAMA_THREADS sets both
    ],
)
def test_it_generates_on_half_the_cores_it_evaluates_prompts_on(
    choice: ThreadChoice, generating: int
) -> None:
    assert generation_threads(choice) == generating


@pytest.mark.slow
def test_a_body_is_refused_unread_without_the_key_and_bounded_with_it(
    tmp_path: Path, smollm2_path: Path
) -> None:
    chat = "/v1/chat/completions"
    with ModelServer(tmp_path / "guarded", smollm2_path, api_key=KEY) as server:
        body = {"model": "smollm2", "messages": [{"role": "user", "content": "x" * (2 << 20)}]}
        refused = httpx.post(server.url + chat, json=body)
        assert refused.status_code == 401  # before its 2 MiB were read
        keyed = {"Authorization": f"Bearer {KEY}"}
        too_large = httpx.post(server.url + chat, json=body, headers=keyed)
        assert too_large.status_code == 413
        assert "request body larger than" in too_large.json()["detail"]
