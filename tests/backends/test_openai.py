"""The OpenAI-compatible backend against a real server: llama-cpp-python's
`python -m llama_cpp.server` serving SmolLM2-135M as model `smollm2` (the `llama_server`
fixture), plus a tiny stub server for error answers the real one cannot be made to give.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import mlflow
import openai
import pytest

from support.servers import LlamaCppServer, free_port
from tipbench import BackendUnavailable, GenerationFailed, ModelNotFound, ModelSizeUnknown
from tipbench.backends import (
    Backend,
    BackendOptions,
    GenerationRequest,
    ModelSpec,
    check_size,
    open_backend,
)
from tipbench.collect import CollectConfig, collect, parse_tips, tips_schema
from tipbench.suite import load_suite
from tipbench.tracking import CANDIDATES_FILE, CELL_RUNS

SMOLLM2 = ModelSpec.parse("openai:smollm2")


def backend_at(base_url: str, spec: ModelSpec = SMOLLM2) -> Backend:
    return open_backend(spec, BackendOptions(openai_base_url=base_url))


@pytest.fixture
def base_url(llama_server: LlamaCppServer) -> str:
    return f"{llama_server.url}/v1"


class Recorder:
    """Records the chat requests an OpenAI client sends and the status of each answer."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.statuses: list[int] = []

    def client(self, base_url: str) -> openai.OpenAI:
        def on_request(request: httpx.Request) -> None:
            if request.url.path.endswith("/chat/completions"):
                self.sent.append(json.loads(request.content))

        def on_response(response: httpx.Response) -> None:
            if response.request.url.path.endswith("/chat/completions"):
                self.statuses.append(response.status_code)

        hooks = {"request": [on_request], "response": [on_response]}
        return openai.OpenAI(
            base_url=base_url,
            api_key="not-needed",
            max_retries=0,
            http_client=httpx.Client(event_hooks=hooks),  # type: ignore[arg-type]
        )


def tips_request(n_tips: int = 2, max_tokens: int = 120) -> GenerationRequest:
    suite = load_suite()
    return GenerationRequest(
        messages=suite.prompt("v1").render(suite.select_scenarios(1)[0], n_tips),
        temperature=0.7,
        seed=42,
        max_tokens=max_tokens,
        json_schema=tips_schema(n_tips),
    )


# -- the real llama.cpp server ------------------------------------------------------------


@pytest.mark.slow
def test_describe_lists_the_model_without_a_size(base_url: str) -> None:
    info = backend_at(base_url).describe()
    assert info.parameter_count is None  # llama-cpp-python's server does not report it
    assert base_url in info.identity and "smollm2" in info.identity


@pytest.mark.slow
def test_unknown_size_is_refused_unless_declared_or_allowed(base_url: str) -> None:
    info = backend_at(base_url).describe()
    with pytest.raises(ModelSizeUnknown, match=r"'openai:smollm2@1\.5B' or pass --allow-unknown"):
        check_size(SMOLLM2, info, 4.0)
    declared = ModelSpec.parse("openai:smollm2@135M")
    assert check_size(declared, backend_at(base_url, declared).describe(), 4.0) == 135_000_000
    assert check_size(SMOLLM2, info, 4.0, allow_unknown_size=True) is None


@pytest.mark.slow
def test_unknown_model_is_not_found_and_lists_what_is_served(base_url: str) -> None:
    with pytest.raises(ModelNotFound, match=r"has no such model \(it serves: smollm2\)"):
        backend_at(base_url, ModelSpec.parse("openai:gpt-4o")).describe()


def test_unreachable_base_url_is_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = backend_at(url)
    with pytest.raises(BackendUnavailable, match=f"cannot reach the server at {url}"):
        backend.describe()
    with pytest.raises(BackendUnavailable):
        backend.generate(tips_request())


@pytest.mark.slow
def test_structured_output_falls_back_to_the_style_the_server_accepts(base_url: str) -> None:
    """llama-cpp-python's server only knows `{"type": "json_object", "schema": ...}` (see
    `llama_cpp.llama_types.ChatCompletionRequestResponseFormat`) and refuses OpenAI's
    `json_schema` style with HTTP 500; the backend must then use the style it accepts."""
    backend = backend_at(base_url)
    recorder = Recorder()
    backend.client = recorder.client(base_url)  # type: ignore[attr-defined]

    answer = backend.generate(tips_request(n_tips=2))
    assert [sent["response_format"]["type"] for sent in recorder.sent] == [
        "json_schema",
        "json_object",
    ]
    assert recorder.statuses == [500, 200]
    assert recorder.sent[1]["response_format"]["schema"] == tips_schema(2)
    assert recorder.sent[1]["seed"] == 42 and recorder.sent[1]["temperature"] == 0.7
    assert answer.structured is True
    assert len(parse_tips(answer.text, 2).tips) == 2

    # the accepted style is remembered: the next request goes straight to it
    backend.generate(tips_request(n_tips=2, max_tokens=16))
    assert [sent["response_format"]["type"] for sent in recorder.sent[2:]] == ["json_object"]


@pytest.mark.slow
def test_json_mode_asks_for_a_json_object_and_free_requests_for_nothing(base_url: str) -> None:
    backend = backend_at(base_url)
    recorder = Recorder()
    backend.client = recorder.client(base_url)  # type: ignore[attr-defined]
    plain = tips_request(n_tips=2, max_tokens=48)

    json_answer = backend.generate(replace(plain, json_schema=None, json_object=True))
    free_answer = backend.generate(replace(plain, json_schema=None))

    assert recorder.sent[0]["response_format"] == {"type": "json_object"}
    assert "response_format" not in recorder.sent[1]
    assert (json_answer.structured, free_answer.structured) == (True, False)
    assert json_answer.text.lstrip().startswith("{")


@pytest.mark.slow
def test_a_prompt_over_the_context_window_fails_the_generation(base_url: str) -> None:
    long = GenerationRequest((("user", "plan my week " * 1500),), 0.0, 1, 16, tips_schema(2))
    with pytest.raises(GenerationFailed, match=r"HTTP 400: .*maximum context length"):
        backend_at(base_url).generate(long)


# -- collect on the real server -----------------------------------------------------------


def grid(base_url: str, model: str, **overrides: object) -> CollectConfig:
    values: dict[str, object] = {
        "models": [model],
        "prompts": ["v1"],
        "n_scenarios": 1,
        "n_tips": 2,
        "max_tokens": 120,
        "openai_base_url": base_url,
    }
    return CollectConfig(**(values | overrides))  # type: ignore[arg-type]


@pytest.mark.slow
def test_collect_refuses_a_model_of_unknown_size(base_url: str, sqlite_uri: str) -> None:
    with pytest.raises(ModelSizeUnknown, match="openai:smollm2"):
        collect(grid(base_url, "openai:smollm2"), tracking_uri=sqlite_uri)
    assert mlflow.MlflowClient(sqlite_uri).get_experiment_by_name("tip-bench-auto") is None


@pytest.mark.slow
def test_collect_records_a_cell_from_the_server(base_url: str, sqlite_uri: str) -> None:
    result = collect(grid(base_url, "openai:smollm2@135M"), tracking_uri=sqlite_uri)
    assert result.exit_code == 0, result.failed

    client = mlflow.MlflowClient(sqlite_uri)
    experiment = client.get_experiment_by_name("tip-bench-auto")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id], CELL_RUNS)
    scenario = load_suite().select_scenarios(1)[0].id
    assert run.info.run_name == f"openai:smollm2|v1|{scenario}"
    assert run.info.status == "FINISHED"
    assert run.data.params["backend"] == "openai"
    assert run.data.params["model"] == "openai:smollm2"
    assert run.data.metrics["candidate_count"] == 2
    assert run.data.tags["parse_method"] == "json"  # the schema-constrained answer
    path = mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path=CANDIDATES_FILE, tracking_uri=sqlite_uri
    )
    candidates = json.loads(Path(path).read_text(encoding="utf-8"))["candidates"]
    assert len(candidates) == 2
    assert all(c["text"].strip() for c in candidates)

    # allowing unknown sizes works too; the identical request comes from the response cache
    allowed = grid(base_url, "openai:smollm2", allow_unknown_size=True, experiment="tip-bench-b")
    assert collect(allowed, tracking_uri=sqlite_uri).exit_code == 0
    experiment_b = client.get_experiment_by_name("tip-bench-b")
    assert experiment_b is not None
    (cached,) = client.search_runs([experiment_b.experiment_id], CELL_RUNS)
    assert cached.info.status == "FINISHED"
    assert cached.data.metrics["cached"] == 1.0


# -- error answers, from a stub server ----------------------------------------------------


class StubOpenAI:
    """Answers every chat request with one fixed HTTP error; lists model `smollm2`."""

    def __init__(self, status: int, error: str) -> None:
        self.status, self.error = status, error
        self.chat_requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.reply(200, {"object": "list", "data": [{"id": "smollm2", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                stub.chat_requests.append(json.loads(self.rfile.read(length)))
                self.reply(stub.status, {"error": {"message": stub.error, "type": "error"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stub_factory() -> Iterator[Any]:
    stubs: list[StubOpenAI] = []

    def make(status: int, error: str) -> StubOpenAI:
        stubs.append(StubOpenAI(status, error))
        return stubs[-1]

    yield make
    for stub in stubs:
        stub.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("schema", [True, False])
def test_a_bad_request_mentioning_format_fails_instead_of_looping(
    stub_factory: Any, schema: bool
) -> None:
    stub = stub_factory(400, "invalid message format: content must be a string")
    request = tips_request() if schema else GenerationRequest((("user", "hi"),), 0.0, 1, 16)
    with pytest.raises(GenerationFailed, match="HTTP 400"):
        backend_at(stub.url).generate(request)
    # with a schema every structured style is tried once, then the request fails
    styles = [r.get("response_format", {}).get("type") for r in stub.chat_requests]
    assert styles == (["json_schema", "json_object", None] if schema else [None])


@pytest.mark.parametrize(
    ("status", "error"), [(500, "out of memory"), (503, "server overloaded, try later")]
)
def test_server_errors_fail_the_generation(stub_factory: Any, status: int, error: str) -> None:
    stub = stub_factory(status, error)
    with pytest.raises(GenerationFailed, match=f"HTTP {status}.*{error}"):
        backend_at(stub.url).generate(tips_request())
    assert len(stub.chat_requests) == 1  # a real failure is not mistaken for a refused style
