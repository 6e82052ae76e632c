"""The Ollama backend against FakeOllama.

Real Ollama cannot be installed here, so these tests run against `support.ollama_server`,
a protocol server that follows Ollama's documented native API (`/api/show`, `/api/chat`,
`/api/ps`, keep_alive load/unload) and is itself checked with the official `ollama` client
in `tests/support/test_ollama_server.py`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import ollama
import pytest

from support.ollama_server import FakeOllama, ModelEntry
from support.servers import free_port
from tipbench import (
    BackendUnavailable,
    GenerationFailed,
    ModelNotFound,
    ModelSizeUnknown,
    ModelTooLarge,
)
from tipbench.backends import (
    Backend,
    BackendOptions,
    GenerationRequest,
    ModelSpec,
    check_size,
    open_backend,
)
from tipbench.backends import _ollama as ollama_backend
from tipbench.collect import AnswerDone, parse_tips, tips_schema

QWEN = "qwen2.5:0.5b"
GEMMA = "gemma3:1b"
LLAMA_8B = "llama3.1:8b"
MODELS = {
    # /api/show reports general.parameter_count; its parameter_size label is rounded
    QWEN: ModelEntry(parameter_count=494_032_768, parameter_size="0.5B", family="qwen2"),
    # no general.parameter_count: only details.parameter_size tells the size
    GEMMA: ModelEntry(parameter_count=None, parameter_size="999.89M", family="gemma3"),
    LLAMA_8B: ModelEntry(parameter_count=8_030_261_248, parameter_size="8.0B"),
    "mystery:1b": ModelEntry(parameter_count=None, parameter_size=""),
    "smollm2": ModelEntry(parameter_count=134_515_008, parameter_size="134.52M"),  # ":latest"
}
PROMPT = (
    ("system", "You write short tips."),
    ("user", "Write 3 tips.\nTasks:\n- write the quarterly report\n- call the dentist"),
)


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(MODELS) as fake:
        yield fake


def backend_for(server: FakeOllama | str, name: str, **options: object) -> Backend:
    url = server if isinstance(server, str) else server.url
    spec = ModelSpec.parse(f"ollama:{name}")
    return open_backend(spec, BackendOptions(ollama_url=url, **options))  # type: ignore[arg-type]


def request(schema: bool = True, seed: int = 5) -> GenerationRequest:
    return GenerationRequest(
        messages=PROMPT,
        temperature=0.3,
        seed=seed,
        max_tokens=96,
        json_schema=tips_schema(3) if schema else None,
    )


def chats(server: FakeOllama) -> list[tuple[str, str]]:
    return [event for event in server.events if event[0] == "chat"]


def test_describe_reads_general_parameter_count(server: FakeOllama) -> None:
    info = backend_for(server, QWEN).describe()
    assert info.parameter_count == 494_032_768  # not the rounded "0.5B" label
    assert QWEN in info.identity


def test_describe_falls_back_to_details_parameter_size(server: FakeOllama) -> None:
    assert backend_for(server, GEMMA).describe().parameter_count == 999_890_000


def test_describe_without_any_size_is_refused_unless_declared(server: FakeOllama) -> None:
    backend = backend_for(server, "mystery:1b")
    info = backend.describe()
    assert info.parameter_count is None
    with pytest.raises(ModelSizeUnknown, match=r"ollama:mystery:1b@1\.5B"):
        check_size(backend.spec, info, 4.0)
    assert check_size(backend.spec, info, 4.0, allow_unknown_size=True) is None
    declared = ModelSpec.parse("ollama:mystery:1b@1B")
    assert check_size(declared, info, 4.0) == 1_000_000_000


def test_size_guard_refuses_an_8b_model_before_any_chat(server: FakeOllama) -> None:
    backend = backend_for(server, LLAMA_8B)
    with pytest.raises(ModelTooLarge, match=r"ollama:llama3\.1:8b has 8\.03B .* limit of 4B"):
        check_size(backend.spec, backend.describe(), max_model_b=4.0)
    assert server.requests == []  # nothing reached /api/chat, not even a load
    assert server.loads == {}


def test_describe_reads_ollama_host_by_default(
    server: FakeOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    backend = open_backend(ModelSpec.parse(QWEN))  # a bare tag means Ollama
    assert backend.options.ollama_url == server.url
    assert backend.describe().parameter_count == 494_032_768


def test_unknown_model_is_not_found(server: FakeOllama) -> None:
    with pytest.raises(ModelNotFound, match=rf"ollama:llama3:70b: Ollama at {server.url} has no"):
        backend_for(server, "llama3:70b").describe()
    with pytest.raises(ModelNotFound):
        backend_for(server, "llama3:70b").load()


def test_unreachable_server_is_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    backend = backend_for(url, QWEN)
    generate = (lambda: backend.generate(request()), lambda: backend.generate(streamed()))
    for call in (backend.describe, backend.load, *generate):
        with pytest.raises(BackendUnavailable, match=f"cannot reach Ollama at {url}"):
            call()


def test_load_makes_the_model_resident_once(server: FakeOllama) -> None:
    backend = backend_for(server, QWEN)
    backend.load()
    assert server.resident == {QWEN}
    assert server.requests[-1]["messages"] == []  # Ollama's documented load request
    assert server.requests[-1]["keep_alive"] == "10m"
    backend.generate(request())
    backend.generate(request(seed=6))
    assert server.loads == {QWEN: 1}
    assert server.events == [("load", QWEN), ("chat", QWEN), ("chat", QWEN)]


# what tipbench samples with, said outright: Ollama's own repeat penalty is 1.1
OPTIONS = {"temperature": 0.3, "seed": 5, "repeat_penalty": 1.0, "num_predict": 96}


def test_generate_passes_options_and_the_schema_as_format(server: FakeOllama) -> None:
    backend = backend_for(server, QWEN)
    backend.load()
    answer = backend.generate(request(seed=5))

    sent = server.requests[-1]
    assert sent["options"] == OPTIONS
    assert sent["format"] == tips_schema(3)
    assert sent["stream"] is False
    assert sent["keep_alive"] == "10m"  # stays loaded for the rest of its block
    assert sent["messages"] == [{"role": r, "content": c} for r, c in PROMPT]

    assert answer.structured is True
    assert len(json.loads(answer.text)["tips"]) == 3
    assert parse_tips(answer.text, 3).method == "json"
    assert answer.prompt_tokens > 0 and answer.completion_tokens > 0


def test_generate_without_schema_sends_no_format(server: FakeOllama) -> None:
    backend = backend_for(server, QWEN)
    answer = backend.generate(request(schema=False))
    assert not server.requests[-1].get("format")
    assert answer.structured is False
    assert len(parse_tips(answer.text, 3).tips) == 3  # numbered lines


def never_complete(text: str) -> bool:
    return False


def streamed(complete: Callable[[str], bool] = never_complete) -> GenerationRequest:
    """A free request that streams until `complete`; FakeOllama answers it with 3 tips."""
    return replace(request(schema=False), complete=complete)


def test_a_streamed_free_answer_is_the_unstreamed_one(server: FakeOllama) -> None:
    backend = backend_for(server, QWEN)
    whole = backend.generate(request(schema=False))
    answer = backend.generate(streamed())

    sent = server.requests[-1]
    assert sent["stream"] is True and not sent.get("format")
    assert sent["options"] == OPTIONS
    assert answer.text == whole.text
    # the counts of the stream's last chunk
    assert (answer.prompt_tokens, answer.completion_tokens) == (
        whole.prompt_tokens,
        whole.completion_tokens,
    )
    assert answer.structured is False
    assert len(chats(server)) == 2  # nothing else to ask


def test_a_free_answer_stops_once_it_is_complete(server: FakeOllama) -> None:
    backend = backend_for(server, QWEN)
    whole = backend.generate(request(schema=False))
    sent = len(server.requests)
    early = backend.generate(streamed(AnswerDone(2)))

    assert whole.text.startswith(early.text)
    assert parse_tips(early.text, 2).tips == parse_tips(whole.text, 2).tips
    assert len(parse_tips(early.text, 2).tips) == 2
    assert len(parse_tips(whole.text, 3).tips) == 3
    # one token a chunk (FakeOllama streams a word a chunk and counts words as tokens)
    assert early.completion_tokens == len(early.text.split()) < whole.completion_tokens
    # the prompt counted by Ollama in a one-token request of the same messages
    assert early.prompt_tokens == whole.prompt_tokens
    stream, count = server.requests[sent:]
    assert stream["stream"] is True
    assert count["stream"] is False and count["options"]["num_predict"] == 1
    assert count["messages"] == stream["messages"]
    assert count["keep_alive"] == "10m"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "needle"),
    [(500, "more system memory"), (503, "server busy"), (404, "not found")],
)
def test_server_errors_fail_the_generation(
    server: FakeOllama, status: int, needle: str, stream: bool
) -> None:
    backend = backend_for(server, QWEN)
    server.fail_next(status)
    with pytest.raises(GenerationFailed, match=rf"HTTP {status}: .*{needle}"):
        backend.generate(streamed() if stream else request())
    assert chats(server) == []
    backend.generate(request())  # the next request goes through
    assert len(chats(server)) == 1


def test_an_error_in_the_stream_fails_the_generation(server: FakeOllama) -> None:
    server.break_stream_next("llama runner process has terminated")
    with pytest.raises(GenerationFailed, match="chat failed: llama runner process has term"):
        backend_for(server, QWEN).generate(streamed())


@pytest.mark.parametrize("stream", [False, True])
def test_a_slow_answer_times_out_as_unavailable(server: FakeOllama, stream: bool) -> None:
    server.delay_next(3.0)
    backend = backend_for(server, QWEN, timeout_s=0.3)
    with pytest.raises(BackendUnavailable, match="timed out"):
        backend.generate(streamed() if stream else request())


def test_unload_sends_keep_alive_zero_and_the_model_leaves_ps(server: FakeOllama) -> None:
    with backend_for(server, QWEN) as backend:
        backend.generate(request())
        assert server.resident == {QWEN}
    assert server.requests[-1]["keep_alive"] == 0
    assert server.requests[-1]["messages"] == []
    assert ollama.Client(host=server.url).ps().models == []
    assert server.events[-1] == ("unload", QWEN)


class SlowUnloadOllama(FakeOllama):
    """Like real Ollama, answers the unload request at once and frees the model moments later."""

    def __init__(self, *args: object, unload_after_s: float | None = 0.4) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.unload_after_s = unload_after_s

    def _unload(self, model: str) -> None:
        if self.unload_after_s is not None:
            threading.Timer(self.unload_after_s, super()._unload, args=(model,)).start()


@pytest.mark.parametrize("name", [QWEN, "smollm2", "smollm2:latest"])
def test_unload_waits_until_the_model_is_gone(name: str) -> None:
    """The next model of the grid must not load while this one is still in memory."""
    with SlowUnloadOllama(MODELS) as server:
        backend = backend_for(server, name)
        backend.load()
        assert server.resident
        backend.unload()
        assert server.resident == set()


def test_unload_that_never_completes_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ollama_backend, "_UNLOAD_WAIT_S", 0.3)
    with SlowUnloadOllama(MODELS, unload_after_s=None) as server:
        backend = backend_for(server, QWEN)
        backend.load()
        with pytest.raises(BackendUnavailable, match="still lists the model as loaded"):
            backend.unload()
