"""A small protocol server that speaks Ollama's native HTTP API, for tests.

Real Ollama cannot be installed on this machine (no network beyond the package registries), so
the tests of tipbench's Ollama backend run against this server instead. It follows Ollama's
documented API (``/api/version``, ``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/chat``,
``/api/generate``, including the empty-request load/unload semantics of ``keep_alive``) and is
itself checked with the official ``ollama`` Python client in ``test_ollama_server.py``.

Like real Ollama, loading a model never evicts another one: a model stays resident until a
request with ``keep_alive`` 0 unloads it (resident models do not expire on their own; tests are
shorter than any realistic ``keep_alive``). ``max_resident`` therefore shows whether a client
really unloads. Answers are deterministic tips derived from the last user message (or, for a
``format`` schema with integer properties such as a judge's scores, in-range integers). Faults
(HTTP errors, delays, unparsable content) can be queued for retry tests.

Only the standard library is used.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

OLLAMA_VERSION = "0.6.5"
DEFAULT_ERRORS = {
    404: "model not found",
    500: "model requires more system memory (5.6 GiB) than is available (1.2 GiB)",
    503: "server busy, please try again.  maximum pending requests exceeded",
}
GARBAGE = "Sure!! here are some thoughts ~~ stay positive and keep going, you got this :)"
TEMPLATES = (
    "Spend 20 minutes on {task} before lunch.",
    "Break {task} into three small steps and start the first one now.",
    "Block a quiet hour for {task} and silence notifications.",
    "Finish {task} before you open your email.",
    "Write down what done looks like for {task} in one sentence.",
)
_DURATION = re.compile(r"(-?\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class ModelEntry:
    """One installed model, as ``/api/tags`` and ``/api/show`` describe it."""

    parameter_count: int | None
    parameter_size: str
    family: str = "llama"
    quantization_level: str = "Q4_K_M"
    format: str = "gguf"
    size: int = 1_000_000_000
    context_length: int = 4096


#: Two small models that pass the default size guard: the Airflow tests' two-model grid.
QWEN, GEMMA = "qwen2.5:0.5b", "gemma3:1b"
TWO_MODELS = {
    QWEN: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M", family="qwen2"),
    GEMMA: ModelEntry(parameter_count=999_885_952, parameter_size="999.89M", family="gemma3"),
}


#: A test's model: the answer to a chat request's messages and ``format``.
Responder = Callable[[list[dict[str, Any]], Any], str]


@dataclass(frozen=True)
class _Fault:
    kind: str  # "fail" | "delay" | "garbage" | "break" | "none"
    status: int = 200
    body: str = ""
    seconds: float = 0.0


def canonical(name: str) -> str:
    """Ollama's model name with the implicit ``:latest`` tag."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def keep_alive_seconds(value: Any) -> float | None:
    """Seconds from a ``keep_alive`` value (number of seconds or Go duration); None = forever."""
    if value is None:
        return 300.0
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION.findall(text)
            if not parts:
                return 300.0
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    return None if seconds < 0 else seconds


def tasks_from(text: str) -> list[str]:
    """Task lines of a prompt: bullet or numbered lines, else its last non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    bullets = [re.sub(r"^(?:[-*•]|\d+[.)])\s*", "", ln) for ln in lines]
    tasks = [b for b, ln in zip(bullets, lines, strict=True) if b != ln and b]
    tasks = tasks or lines[-1:] or ["your most important task"]
    return [t.rstrip(".")[:60] for t in tasks]


def tip_count(fmt: Any, text: str) -> int:
    if isinstance(fmt, dict):
        tips = fmt.get("properties", {}).get("tips", {})
        if isinstance(tips, dict) and isinstance(tips.get("minItems"), int):
            return max(1, int(tips["minItems"]))
    match = re.search(r"\b(\d{1,2})\s+tips?\b", text, re.IGNORECASE)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else 3


def integer_answer(fmt: Any, text: str) -> dict[str, int] | None:
    """For a ``format`` schema with integer properties (a judge's scores): a deterministic
    value within each one's ``enum`` or ``minimum``..``maximum``, derived from ``text``."""
    properties = fmt.get("properties") if isinstance(fmt, dict) else None
    if not isinstance(properties, dict):
        return None
    values = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or prop.get("type") != "integer":
            continue
        choices = prop.get("enum") or list(
            range(int(prop.get("minimum", 0)), int(prop.get("maximum", 9)) + 1)
        )
        digest = hashlib.sha256(f"{name}\n{text}".encode()).digest()
        values[name] = int(choices[digest[0] % len(choices)])
    return values or None


def answer(messages: list[dict[str, Any]], fmt: Any) -> str:
    """Deterministic tips for the last user message: JSON when ``format`` is set, else lines.

    A ``format`` schema with integer properties gets a JSON object of in-range integers.
    """
    last = next(
        (str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), ""
    )
    if (integers := integer_answer(fmt, last)) is not None:
        return json.dumps(integers)
    tasks = tasks_from(last)
    tips = [
        TEMPLATES[i % len(TEMPLATES)].format(task=tasks[i % len(tasks)])
        for i in range(tip_count(fmt, last))
    ]
    if fmt:
        return json.dumps({"tips": tips})
    return "\n".join(f"{i}. {tip}" for i, tip in enumerate(tips, 1))


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeOllama:
    """Ollama protocol server on ``127.0.0.1``, a free port, in a daemon thread."""

    def __init__(self, models: dict[str, ModelEntry]) -> None:
        self.models = {canonical(name): entry for name, entry in models.items()}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._events: list[tuple[str, str]] = []
        self._loads: Counter[str] = Counter()
        self._resident: dict[str, datetime] = {}  # model -> expires_at
        self._requests: list[dict[str, Any]] = []
        self._faults: list[_Fault] = []
        self._max_resident = 0
        self._scripts: dict[str, list[str]] = {}
        self._responders: dict[str, Responder] = {}
        self.free_garbage = False  # a model whose free answers never parse: `format` helps
        self.token_s = 0.0  # generation time per answer token (word), as a real model takes
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ----------------------------------------------------------------------------
    def start(self) -> FakeOllama:
        server = self

        class Handler(_Handler):
            fake = server

        self._stopping.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), daemon=True, name="fake-ollama"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOllama is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # recordings (copies, taken under the lock) ---------------------------------------------
    @property
    def events(self) -> list[tuple[str, str]]:
        """``("load" | "unload" | "chat" | "generate", model)`` in order; failed requests
        record nothing, every unload request is recorded even if the model was not resident."""
        with self._lock:
            return list(self._events)

    @property
    def loads(self) -> Counter[str]:
        with self._lock:
            return Counter(self._loads)

    @property
    def resident(self) -> set[str]:
        with self._lock:
            return set(self._resident)

    @property
    def max_resident(self) -> int:
        with self._lock:
            return self._max_resident

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed bodies of all ``/api/chat`` requests, including load/unload and failed ones."""
        with self._lock:
            return list(self._requests)

    # fault injection: queued in call order, one consumed per generation request ------------
    def fail_next(self, status: int, count: int = 1, body: str | None = None) -> None:
        """Answer the next ``count`` generation requests with HTTP ``status`` and ``body``."""
        if body is None:
            body = json.dumps({"error": DEFAULT_ERRORS.get(status, "internal error")})
        with self._lock:
            self._faults += [_Fault("fail", status=status, body=body)] * count

    def delay_next(self, seconds: float, count: int = 1) -> None:
        """Hold the answer of the next ``count`` generation requests for ``seconds``.

        The request itself is handled first (model loaded, event recorded), as a slow
        generation would be; a client that times out meanwhile finds the model resident.
        """
        with self._lock:
            self._faults += [_Fault("delay", seconds=seconds)] * count

    def clear_faults(self) -> None:
        """Drop the faults no request has met yet: requests are answered at once again."""
        with self._lock:
            self._faults.clear()

    def break_stream_next(self, error: str = "llama runner process has terminated") -> None:
        """Break the next generation request: a stream after its first piece, with an error
        line as Ollama sends one mid-stream; an unstreamed request with HTTP 500."""
        with self._lock:
            self._faults.append(_Fault("break", status=500, body=error))

    def garbage_next(self, count: int = 1) -> None:
        """Answer the next ``count`` generation requests with content that is not tips."""
        with self._lock:
            self._faults += [_Fault("garbage")] * count

    # scripted models: answers known in advance (a scripted reflection model, a test's judge)
    def script(self, model: str, answers: list[str]) -> None:
        """Answer the next chat requests to ``model`` with ``answers``, one each, in order
        (then as before): a model whose answers a test knows in advance."""
        with self._lock:
            self._scripts.setdefault(canonical(model), []).extend(answers)

    def respond(self, model: str, responder: Responder) -> None:
        """Answer every chat request to ``model`` with ``responder(messages, format)``."""
        with self._lock:
            self._responders[canonical(model)] = responder

    def scripted_left(self, model: str) -> int:
        """How many scripted answers of ``model`` are still unused."""
        with self._lock:
            return len(self._scripts.get(canonical(model), []))

    def _content(self, model: str, messages: list[dict[str, Any]], fmt: Any) -> str | None:
        with self._lock:
            script = self._scripts.get(model)
            if script:
                return script.pop(0)
            responder = self._responders.get(model)
        return responder(messages, fmt) if responder is not None else None

    # model state --------------------------------------------------------------------------
    def _load(self, model: str, keep_alive: Any) -> None:
        seconds = keep_alive_seconds(keep_alive)
        expires = datetime.now(UTC) + (
            timedelta(days=100 * 365) if seconds is None else timedelta(seconds=seconds)
        )
        with self._lock:
            if model not in self._resident:
                self._loads[model] += 1
                self._events.append(("load", model))
            self._resident[model] = expires
            self._max_resident = max(self._max_resident, len(self._resident))

    def _unload(self, model: str) -> None:
        with self._lock:
            self._resident.pop(model, None)
            self._events.append(("unload", model))

    def _ps(self) -> dict[str, Any]:
        with self._lock:
            resident = dict(self._resident)
        return {
            "models": [
                {
                    **self._tag(name),
                    "expires_at": expires.isoformat(),
                    "size_vram": 0,
                    "context_length": self.models[name].context_length,
                }
                for name, expires in resident.items()
            ]
        }

    def _tag(self, name: str) -> dict[str, Any]:
        entry = self.models[name]
        return {
            "name": name,
            "model": name,
            "modified_at": "2025-01-01T00:00:00Z",
            "size": entry.size,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": self._details(entry),
        }

    @staticmethod
    def _details(entry: ModelEntry) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": entry.format,
            "family": entry.family,
            "families": [entry.family],
            "parameter_size": entry.parameter_size,
            "quantization_level": entry.quantization_level,
        }

    def _show(self, name: str) -> dict[str, Any]:
        entry = self.models[name]
        info: dict[str, Any] = {
            "general.architecture": entry.family,
            f"{entry.family}.context_length": entry.context_length,
        }
        if entry.parameter_count is not None:
            info["general.parameter_count"] = entry.parameter_count
        return {
            "modelfile": f"FROM {name}\n",
            "parameters": "temperature 0.7",
            "template": "{{ .Prompt }}",
            "details": self._details(entry),
            "model_info": info,
            "capabilities": ["completion"],
            "modified_at": "2025-01-01T00:00:00Z",
        }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOllama
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self,
        status: int,
        body: str | dict[str, Any],
        content_type: str = "application/json; charset=utf-8",
    ) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self, model: str) -> None:
        self._send(404, {"error": f"model '{model}' not found"})

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout tests)
            self.close_connection = True

    def do_HEAD(self) -> None:
        self._send(200, "", "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        fake = self.fake
        if self.path == "/":
            self._send(200, "Ollama is running", "text/plain; charset=utf-8")
        elif self.path == "/api/version":
            self._send(200, {"version": OLLAMA_VERSION})
        elif self.path == "/api/tags":
            self._send(200, {"models": [fake._tag(name) for name in fake.models]})
        elif self.path == "/api/ps":
            self._send(200, fake._ps())
        else:
            self._send(404, "404 page not found", "text/plain")

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
        except ValueError as exc:
            self._send(400, {"error": f"invalid request: {exc}"})
            return
        if self.path == "/api/show":
            name = str(body.get("model") or body.get("name") or "")
            if canonical(name) not in self.fake.models:
                self._not_found(name)
            else:
                self._send(200, self.fake._show(canonical(name)))
        elif self.path in ("/api/chat", "/api/generate"):
            self._inference(body, chat=self.path == "/api/chat")
        else:
            self._send(404, "404 page not found", "text/plain")

    def _inference(self, body: dict[str, Any], chat: bool) -> None:
        fake = self.fake
        requested = str(body.get("model") or "")
        model = canonical(requested)
        if chat:
            with fake._lock:
                fake._requests.append(body)
        if not requested:
            self._send(400, {"error": "model is required"})
            return
        if model not in fake.models:
            self._not_found(requested)
            return
        keep_alive = body.get("keep_alive")
        unload = keep_alive_seconds(keep_alive) == 0
        if chat:
            messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        else:
            prompt = str(body.get("prompt") or "")
            messages = [{"role": "user", "content": prompt}] if prompt else []
        base = {"model": requested, "created_at": _now(), "done": True}
        empty: dict[str, Any] = (
            {"message": {"role": "assistant", "content": ""}} if chat else {"response": ""}
        )
        if not messages:  # documented load / unload request: a single JSON object
            if unload:
                fake._unload(model)
            else:
                fake._load(model, keep_alive)
            self._send(200, {**base, **empty, "done_reason": "unload" if unload else "load"})
            return

        with fake._lock:
            fault = fake._faults.pop(0) if fake._faults else _Fault("none")
        if fault.kind == "fail":
            self._send(fault.status, fault.body)
            return
        fake._load(model, keep_alive)
        with fake._lock:
            fake._events.append(("chat" if chat else "generate", model))
        garbage = fault.kind == "garbage" or (fake.free_garbage and not body.get("format"))
        scripted = fake._content(model, messages, body.get("format")) if chat else None
        content = (
            GARBAGE if garbage else scripted if scripted is not None
            else answer(messages, body.get("format"))
        )  # fmt: skip
        if fault.kind == "delay":
            fake._stopping.wait(fault.seconds)
        if fake.token_s:
            fake._stopping.wait(fake.token_s * len(content.split()))
        if unload:
            fake._unload(model)

        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        eval_tokens = len(content.split())
        stats = {
            "done_reason": "stop",
            "total_duration": 1_000_000 * (prompt_tokens + eval_tokens),
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 500_000 * prompt_tokens,
            "eval_count": eval_tokens,
            "eval_duration": 1_000_000 * eval_tokens,
        }
        if not body.get("stream", True):
            if fault.kind == "break":
                self._send(fault.status, {"error": fault.body})
                return
            part = (
                {"message": {"role": "assistant", "content": content}}
                if chat
                else {"response": content}
            )
            self._send(200, {**base, **part, **stats})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        pieces = re.findall(r"\S*\s*", content)[:-1] or [content]
        for piece in pieces:
            part = (
                {"message": {"role": "assistant", "content": piece}}
                if chat
                else {"response": piece}
            )
            line = {"model": requested, "created_at": _now(), **part, "done": False}
            self.wfile.write(json.dumps(line).encode() + b"\n")
            self.wfile.flush()
            if fault.kind == "break":
                self.wfile.write(json.dumps({"error": fault.body}).encode() + b"\n")
                return
        self.wfile.write(json.dumps({**base, **empty, **stats}).encode() + b"\n")
