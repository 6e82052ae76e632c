"""FakeOllama checked with the official ``ollama`` client.

Real Ollama cannot be installed here, so tipbench's Ollama backend is tested against
``support.ollama_server.FakeOllama``, a protocol server following Ollama's documented API.
These tests prove that the official client accepts its answers and that it records what the
backend tests assert on (loads, unloads, residency, requests) and injects faults correctly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import ollama
import pytest

from support.ollama_server import FakeOllama, ModelEntry

QWEN = "qwen2.5:1.5b"
SMOL = "smollm2:135m"
SCHEMA = {
    "type": "object",
    "properties": {
        "tips": {"type": "array", "items": {"type": "string"}, "minItems": 4, "maxItems": 4}
    },
    "required": ["tips"],
}
PROMPT = "Give me tips for my day.\nTasks:\n- write the quarterly report\n- call the dentist"
OPTIONS = {"temperature": 0, "seed": 1, "num_predict": 50}


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    models = {
        QWEN: ModelEntry(parameter_count=1_543_714_304, parameter_size="1.5B", family="qwen2"),
        SMOL: ModelEntry(parameter_count=None, parameter_size="134.52M", quantization_level="F16"),
    }
    with FakeOllama(models) as fake:
        yield fake


@pytest.fixture
def client(server: FakeOllama) -> ollama.Client:
    return ollama.Client(host=server.url)


def user(text: str = PROMPT) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_show_reports_parameter_metadata(client: ollama.Client) -> None:
    shown = client.show(QWEN)
    assert shown.modelinfo is not None and shown.details is not None
    assert shown.modelinfo["general.parameter_count"] == 1_543_714_304
    assert shown.details.parameter_size == "1.5B"
    assert shown.details.family == "qwen2"

    small = client.show(SMOL)
    assert small.modelinfo is not None and small.details is not None
    assert "general.parameter_count" not in small.modelinfo
    assert small.details.parameter_size == "134.52M"


def test_version_and_tags_list_installed_models(client: ollama.Client, server: FakeOllama) -> None:
    assert httpx.get(f"{server.url}/api/version").json()["version"]
    assert sorted(m.model or "" for m in client.list().models) == sorted([QWEN, SMOL])


def test_chat_with_schema_returns_json_tips_and_records_request(
    client: ollama.Client, server: FakeOllama
) -> None:
    reply = client.chat(QWEN, messages=user(), format=SCHEMA, options=OPTIONS)
    tips = json.loads(reply.message.content or "")["tips"]
    assert len(tips) == 4
    assert tips[0] == "Spend 20 minutes on write the quarterly report before lunch."
    assert "call the dentist" in tips[1]
    assert reply.done and reply.done_reason == "stop"
    assert reply.eval_count and reply.prompt_eval_count and reply.total_duration

    again = client.chat(QWEN, messages=user(), format=SCHEMA, options=OPTIONS)
    assert again.message.content == reply.message.content  # deterministic
    request = server.requests[0]
    assert request["options"] == OPTIONS
    assert request["format"] == SCHEMA
    assert request["stream"] is False
    assert server.events == [("load", QWEN), ("chat", QWEN), ("chat", QWEN)]
    assert server.loads[QWEN] == 1


def test_streaming_chat_concatenates_to_the_same_answer(client: ollama.Client) -> None:
    whole = client.chat(QWEN, messages=user(), format=SCHEMA, options=OPTIONS)
    parts = list(client.chat(QWEN, messages=user(), format=SCHEMA, options=OPTIONS, stream=True))
    assert len(parts) > 2 and parts[-1].done and not parts[0].done
    assert parts[-1].eval_count == whole.eval_count
    assert "".join(p.message.content or "" for p in parts) == whole.message.content


def test_plain_chat_answers_numbered_lines(client: ollama.Client) -> None:
    reply = client.chat(QWEN, messages=user("Give me 2 tips.\n- tidy the garage"))
    lines = (reply.message.content or "").splitlines()
    assert lines == [
        "1. Spend 20 minutes on tidy the garage before lunch.",
        "2. Break tidy the garage into three small steps and start the first one now.",
    ]


def test_ps_lists_resident_model_until_keep_alive_zero_unloads_it(
    client: ollama.Client, server: FakeOllama
) -> None:
    assert client.ps().models == []
    client.chat(QWEN, messages=user(), options=OPTIONS)
    running = client.ps().models
    assert [m.model for m in running] == [QWEN]
    assert running[0].expires_at is not None and running[0].details is not None
    assert running[0].details.parameter_size == "1.5B"

    unloaded = client.chat(QWEN, messages=[], keep_alive=0)
    assert unloaded.done_reason == "unload"
    assert client.ps().models == []
    assert server.resident == set()
    assert server.events == [("load", QWEN), ("chat", QWEN), ("unload", QWEN)]


def test_empty_chat_and_generate_load_and_unload(client: ollama.Client, server: FakeOllama) -> None:
    assert client.chat(SMOL, messages=[]).done_reason == "load"
    assert server.resident == {SMOL}
    assert client.generate(SMOL, keep_alive="0s").done_reason == "unload"
    assert client.generate(QWEN).done_reason == "load"
    assert client.generate(QWEN, keep_alive="0").done_reason == "unload"
    assert server.resident == set()
    assert server.max_resident == 1
    assert server.events == [("load", SMOL), ("unload", SMOL), ("load", QWEN), ("unload", QWEN)]


def test_two_models_without_unload_stay_resident_together(
    client: ollama.Client, server: FakeOllama
) -> None:
    client.chat(QWEN, messages=user())
    client.chat(SMOL, messages=user())
    assert server.max_resident == 2
    assert server.resident == {QWEN, SMOL}


def test_model_unloaded_between_blocks_keeps_max_resident_at_one(
    client: ollama.Client, server: FakeOllama
) -> None:
    client.chat(QWEN, messages=user())
    client.chat(QWEN, messages=[], keep_alive=0)
    client.chat(SMOL, messages=user())
    assert server.max_resident == 1
    assert dict(server.loads) == {QWEN: 1, SMOL: 1}


def test_unknown_model_is_a_404(client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as shown:
        client.show("llama3:70b")
    assert shown.value.status_code == 404
    assert shown.value.error == "model 'llama3:70b' not found"
    with pytest.raises(ollama.ResponseError) as chatted:
        client.chat("llama3:70b", messages=user())
    assert chatted.value.status_code == 404


@pytest.mark.parametrize(("status", "needle"), [(500, "system memory"), (503, "server busy")])
def test_injected_errors_raise_then_recover(
    client: ollama.Client, server: FakeOllama, status: int, needle: str
) -> None:
    server.fail_next(status, count=2)
    for _ in range(2):
        with pytest.raises(ollama.ResponseError) as failed:
            client.chat(QWEN, messages=user())
        assert failed.value.status_code == status
        assert needle in failed.value.error
    assert server.resident == set()  # a failed request loaded nothing
    assert client.chat(QWEN, messages=user()).done_reason == "stop"
    assert len(server.requests) == 3


def test_injected_error_in_streaming_chat(client: ollama.Client, server: FakeOllama) -> None:
    server.fail_next(500, body='{"error":"llama runner process has terminated"}')
    with pytest.raises(ollama.ResponseError) as failed:
        list(client.chat(QWEN, messages=user(), stream=True))
    assert failed.value.status_code == 500
    assert failed.value.error == "llama runner process has terminated"


def test_a_broken_stream_ends_with_an_error_line(client: ollama.Client, server: FakeOllama) -> None:
    server.break_stream_next("llama runner process has terminated")
    parts = []
    with pytest.raises(ollama.ResponseError) as failed:
        for part in client.chat(QWEN, messages=user(), stream=True):
            parts.append(part)
    assert len(parts) == 1 and not parts[0].done
    assert failed.value.error == "llama runner process has terminated"
    server.break_stream_next("out of memory")
    with pytest.raises(ollama.ResponseError) as unstreamed:
        client.chat(QWEN, messages=user())
    assert (unstreamed.value.status_code, unstreamed.value.error) == (500, "out of memory")


def test_delay_makes_client_time_out_then_recovers(server: FakeOllama) -> None:
    server.delay_next(2.0)
    impatient = ollama.Client(host=server.url, timeout=0.3)
    with pytest.raises(httpx.TimeoutException):
        impatient.chat(QWEN, messages=user())
    assert impatient.chat(QWEN, messages=user()).done_reason == "stop"


def test_garbage_is_neither_json_nor_numbered(client: ollama.Client, server: FakeOllama) -> None:
    server.garbage_next()
    content = client.chat(QWEN, messages=user(), format=SCHEMA).message.content or ""
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)
    assert not any(line.lstrip()[:1].isdigit() for line in content.splitlines())
    assert json.loads(client.chat(QWEN, messages=user(), format=SCHEMA).message.content or "")


def test_stopped_server_refuses_connections() -> None:
    fake = FakeOllama({QWEN: ModelEntry(parameter_count=1, parameter_size="1B")}).start()
    client = ollama.Client(host=fake.url)
    assert client.ps().models == []
    fake.stop()
    with pytest.raises(ConnectionError):
        client.ps()


def test_chat_streams_ndjson_by_default_like_ollama(server: FakeOllama) -> None:
    response = httpx.post(f"{server.url}/api/chat", json={"model": QWEN, "messages": user()})
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines[-1]["done"] is True and not lines[0]["done"]
    assert server.requests[0].get("stream") is None


def test_schema_with_integer_properties_gets_in_range_integers(client: ollama.Client) -> None:
    scores = {
        "type": "object",
        "properties": {
            "relevance": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
            "format_ok": {"type": "integer", "enum": [0, 1]},
            "count": {"type": "integer", "minimum": 10, "maximum": 12},
        },
        "required": ["relevance", "format_ok", "count"],
    }
    answers = [
        json.loads(client.chat(QWEN, messages=user(text), format=scores).message.content or "")
        for text in ("Score this tip.", "Score this tip.", "Score another tip.", "And a third.")
    ]
    assert answers[0] == answers[1]  # deterministic
    for answer in answers:
        assert set(answer) == {"relevance", "format_ok", "count"}
        assert answer["relevance"] in range(1, 6) and answer["format_ok"] in (0, 1)
        assert answer["count"] in (10, 11, 12)


def test_a_scripted_model_answers_its_script_in_order_then_as_before(
    client: ollama.Client, server: FakeOllama
) -> None:
    """A scripted model (tipbench optimize's reflection model in tests) gives the official
    client its answers in order, streamed or not, then falls back to the usual tips."""
    server.script(QWEN, ["Reasons: first.\n```\nA $tasks\n```", "second answer"])
    first = client.chat(QWEN, messages=user("Rewrite the template."), options=OPTIONS)
    streamed = "".join(
        part.message.content or ""
        for part in client.chat(QWEN, messages=user("Again."), stream=True, options=OPTIONS)
    )
    assert first.message.content == "Reasons: first.\n```\nA $tasks\n```"
    assert streamed == "second answer"
    assert server.scripted_left(QWEN) == 0
    after = client.chat(QWEN, messages=user(), options=OPTIONS).message.content or ""
    assert after.startswith("1. Spend 20 minutes on write the quarterly report")


def test_a_responder_answers_every_request_from_its_messages(
    client: ollama.Client, server: FakeOllama
) -> None:
    """A responder model answers from the request's messages and format (a test's judge)."""
    server.respond(SMOL, lambda messages, fmt: f"{len(messages)} messages, format {fmt}")
    reply = client.chat(SMOL, messages=[*user(), *user("second")], format="json")
    assert reply.message.content == "2 messages, format json"
