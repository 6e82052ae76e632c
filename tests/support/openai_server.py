"""A small scripted OpenAI-compatible server, for tests of models on servers that tipbench
reaches through its `openai` backend (vLLM, LM Studio, llama.cpp's servers, hosted APIs).

It follows the part of the OpenAI API the backend uses, as the official `openai` client
sends it: `GET /v1/models` (with llama.cpp's `meta.n_params` for a model whose size it
reports, none for one it hides, as vLLM and LM Studio do), `POST /v1/chat/completions`
(answered whole, or streamed as server-sent events with the usage in a last chunk when
`stream_options.include_usage` asks for it) and llama-cpp-python's
`POST /extras/tokenize/count`. Each model answers with a test's responder, as
`support.ollama_server.FakeOllama` does (the same responders serve both), and every chat
request is recorded. The real `llama_cpp.server` is what `tests/backends/test_openai.py`
checks the backend against; this one scripts answers that a test knows in advance.

Only the standard library is used.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from support.ollama_server import Responder, answer


class ScriptedOpenAI:
    """An OpenAI-compatible server on `127.0.0.1`, a free port, in a daemon thread.

    `models` maps each model it serves to its parameter count, or None for a model whose
    size the server does not report. `served_from`: answer as llama.cpp's `llama-server`
    serving them from that file (models `owned_by` "llamacpp", `GET /props` naming it).
    """

    def __init__(self, models: dict[str, int | None], served_from: Path | None = None) -> None:
        self.models = dict(models)
        self.served_from = served_from
        self._responders: dict[str, Responder] = {}
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def respond(self, model: str, responder: Responder) -> None:
        """Answer every chat request to `model` with `responder(messages, format)`."""
        self._responders[model] = responder

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat request's body, in order (the one-token counting requests too)."""
        with self._lock:
            return list(self._requests)

    @property
    def url(self) -> str:
        """The base URL, as `--openai-base-url` takes it (`…/v1`)."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def _answer(self, body: dict[str, Any]) -> str:
        with self._lock:
            self._requests.append(body)
        fmt = body.get("response_format") or None
        if isinstance(fmt, dict):  # the schema itself, as the responders take Ollama's format
            fmt = fmt.get("json_schema", {}).get("schema") or fmt.get("schema") or "json"
        responder = self._responders.get(str(body.get("model")), answer)
        return responder(body.get("messages", []), fmt)


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class _Handler(BaseHTTPRequestHandler):
    fake: ScriptedOpenAI
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        served_from = self.fake.served_from
        if self.path.split("?")[0] == "/props" and served_from is not None:
            self._send(200, {"model_path": str(served_from), "build_info": "b1-test"})
            return
        if self.path.rstrip("/") != "/v1/models":
            self._send(404, {"error": {"message": "not found"}})
            return
        owner = "t" if served_from is None else "llamacpp"
        data = []
        for name, count in self.fake.models.items():
            entry: dict[str, Any] = {"id": name, "object": "model", "created": 1, "owned_by": owner}
            if count is not None:
                entry["meta"] = {"n_params": count}
            data.append(entry)
        self._send(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/extras/tokenize/count":
            self._send(200, {"count": _tokens(str(body.get("input", "")))})
            return
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        model = str(body.get("model"))
        if model not in self.fake.models:
            self._send(404, {"error": {"message": f"model {model!r} not found"}})
            return
        text = self.fake._answer(body)
        prompt = sum(_tokens(str(m.get("content") or "")) for m in body.get("messages", []))
        usage = {"prompt_tokens": prompt, "completion_tokens": _tokens(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if body.get("stream"):
            self._stream(model, text, usage if _wants_usage(body) else None)
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        self._send(200, _completion(model, "chat.completion", [choice | {"finish_reason": "stop"}])
                   | {"usage": usage})  # fmt: skip

    def _stream(self, model: str, text: str, usage: dict[str, int] | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = [word + " " for word in text.split(" ")]
        pieces[-1] = pieces[-1].rstrip(" ")
        chunks = [
            _completion(model, "chat.completion.chunk",
                        [{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            for piece in pieces
        ]  # fmt: skip
        chunks.append(
            _completion(model, "chat.completion.chunk",
                        [{"index": 0, "delta": {}, "finish_reason": "stop"}])
        )  # fmt: skip
        if usage is not None:
            chunks.append(_completion(model, "chat.completion.chunk", []) | {"usage": usage})
        try:
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):  # the client had its answer
            pass


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options") or {}
    return bool(options.get("include_usage"))


def _completion(model: str, kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": kind, "created": 1, "model": model, "choices": choices}
