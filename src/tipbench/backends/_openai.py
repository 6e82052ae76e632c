"""The OpenAI-compatible backend: vLLM, llama.cpp's servers, LM Studio, hosted APIs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

import httpx
import openai
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from tipbench._errors import BackendUnavailable, GenerationFailed, ModelNotFound
from tipbench.backends._base import (
    LOOPBACK,
    Backend,
    Generation,
    GenerationRequest,
    ModelInfo,
)
from tipbench.backends._llamacpp import LlamaCppBackend
from tipbench.backends._model_server import SERVER_OWNER
from tipbench.backends._prompt_count import PromptCounter
from tipbench.backends._streaming import read_until_complete

# Transport errors that older openai clients let out of a stream unwrapped (openai-python
# wraps them since its PR #3827): httpx's, or httpx2's, which openai 3 uses.
_TIMEOUTS: tuple[type[Exception], ...] = (httpx.TimeoutException,)
_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx.TransportError,)
with contextlib.suppress(ImportError):
    import httpx2

    _TIMEOUTS += (httpx2.TimeoutException,)
    _TRANSPORT_ERRORS += (httpx2.TransportError,)

#: The `owned_by` of the models llama.cpp's own server (`llama-server`) lists.
LLAMA_SERVER_OWNER = "llamacpp"
#: What a constrained token costs there (`Backend.constrained_token_cost`): it samples first
#: and checks the grammar on the sampled token only (the whole vocabulary only when that one
#: is not allowed): 24.6 ms to 23.3 ms a free one on 2026-11-29 (`bench/README.md`).
LLAMA_SERVER_TOKEN_COST = 1.06
#: What a constrained token costs, by the `owned_by` of the servers that say what they are:
#: llama.cpp's, and `tipbench serve-model` (the embedded backend's sampling behind a server).
#: Both name their model file at `/props`.
SERVER_TOKEN_COSTS = {
    LLAMA_SERVER_OWNER: LLAMA_SERVER_TOKEN_COST,
    SERVER_OWNER: LlamaCppBackend.constrained_token_cost,
}

#: Request fields a server may refuse, and the word its HTTP 400/422 message then holds
#: (the specific words first: "format" may come up in a message about another field).
_REFUSAL_HINTS = {
    "repeat_penalty": "repeat_penalty",
    "stream_options": "stream_options",
    "response_format": "format",
}


def _response_formats(request: GenerationRequest) -> list[dict[str, Any] | None]:
    """Structured-output styles to try, most standard first; `None` means unconstrained."""
    schema = request.json_schema
    if schema is not None:
        return [
            {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}},
            {"type": "json_object", "schema": schema},  # llama-cpp-python's server
            None,
        ]
    if request.json_object:
        return [{"type": "json_object"}, None]
    return [None]


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible `/v1` API; the server manages residency."""

    parallel_requests: ClassVar[bool] = True
    gives_logprobs: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        api_key = os.environ.get("OPENAI_API_KEY")
        self.client = openai.OpenAI(
            base_url=self.options.openai_base_url,
            api_key=api_key or "not-needed",
            timeout=self.options.timeout_s,
            max_retries=0,  # tipbench retries with its own policy
        )
        # which of _response_formats the server accepted, per constraint
        self._format_index: dict[str, int] = {}
        # fields beyond the OpenAI API's (stream_options, repeat_penalty) the server refused
        self._refused: set[str] = set()
        self._model_file: Path | None = None  # known once `describe` has asked
        self._prompt_counter = PromptCounter(
            self.options.openai_base_url,
            self.spec.name,
            api_key,
            self.options.timeout_s,
            self._prompt_tokens,
        )

    def describe(self) -> ModelInfo:
        with self._errors("list models"):
            models = {m.id: m for m in self.client.models.list()}
        model = models.get(self.spec.name)
        if model is None:
            known = ", ".join(sorted(models)[:10]) or "none"
            raise ModelNotFound(
                f"{self.spec}: the server at {self.options.openai_base_url} has no such model "
                f"(it serves: {known})"
            )
        meta = (model.model_extra or {}).get("meta") or {}
        count = meta.get("n_params")  # llama.cpp's llama-server reports it
        if model.owned_by in SERVER_TOKEN_COSTS:
            self.constrained_token_cost = SERVER_TOKEN_COSTS[model.owned_by]
            self._model_file = self._served_file()
        return ModelInfo(
            parameter_count=int(count) if count else None,
            identity=f"{self.options.openai_base_url}|{self.spec.name}|{model.created}",
        )

    @property
    def model_file(self) -> Path | None:
        """The file a server on this machine serves the model from, where the server names
        it (llama.cpp's llama-server and `tipbench serve-model`, at `/props`) and it is here:
        the path tipbench ships for a file it knows then needs no probe
        (`collect/_known_paths.py`)."""
        return self._model_file

    def _served_file(self) -> Path | None:
        url = httpx.URL(self.options.openai_base_url)
        if url.host not in LOOPBACK:  # a path on another machine names nothing here
            return None
        try:
            answer = httpx.get(
                url.copy_with(path="/props"),
                params={"model": self.spec.name},
                headers={"Authorization": f"Bearer {self.client.api_key}"},
                timeout=self.options.timeout_s,
            )
            named = answer.json().get("model_path") if answer.is_success else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        path = Path(named) if isinstance(named, str) and named else None
        return path if path is not None and path.is_file() else None

    def top_logprobs(self, prompt: str, n: int) -> dict[str, float] | None:
        """Asked as a one-token legacy completion (`/v1/completions`, `logprobs`); None from
        a server that refuses it or answers without them."""
        try:
            answer = self.client.completions.create(
                model=self.spec.name, prompt=prompt, max_tokens=1, temperature=0.0, logprobs=n
            )
            top = answer.choices[0].logprobs.top_logprobs[0]  # type: ignore[union-attr,index]
            return {str(token): float(value) for token, value in top.items()}
        except (openai.OpenAIError, AttributeError, LookupError, TypeError, ValueError):
            return None  # refused, unreachable (unstreamed: wrapped), or without them

    def load(self) -> None:
        """Nothing to do: the server loads models itself."""

    def unload(self) -> None:
        """Nothing to do: the OpenAI API has no unload call."""

    def generate(self, request: GenerationRequest) -> Generation:
        if request.complete is not None and request.constraint == "none":
            return self._generate_until_complete(request, request.complete)
        formats = _response_formats(request)
        constraint = request.constraint
        while True:
            index = min(self._format_index.get(constraint, 0), len(formats) - 1)
            response_format = formats[index]
            extra: dict[str, Any] = {"response_format": response_format} if response_format else {}
            can_fall_back = index < len(formats) - 1
            optional = self._optional(request)
            try:
                with self._errors("chat", *optional, "response_format" if can_fall_back else None):
                    response = self.client.chat.completions.create(
                        model=self.spec.name,
                        messages=_messages(request),
                        temperature=request.temperature,
                        seed=request.seed,
                        max_tokens=request.max_tokens,
                        extra_body=optional,  # typed differently across client versions
                        **extra,
                    )
            except _Refused as refused:
                if refused.field == "response_format":
                    # concurrent requests may all be refused the same style: move on by one
                    accepted = self._format_index.get(constraint, 0)
                    self._format_index[constraint] = max(accepted, index + 1)
                else:
                    self._refused.add(refused.field)
                continue
            if not response.choices:
                raise GenerationFailed(f"{self.spec}: the server answered without a choice")
            usage = response.usage
            if usage is not None:
                self._prompt_counter.observe(request, usage.prompt_tokens)
            return Generation(
                text=response.choices[0].message.content or "",
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                structured=response_format is not None,
            )

    def _generate_until_complete(
        self, request: GenerationRequest, complete: Callable[[str], bool]
    ) -> Generation:
        """Stream a free answer and close the stream as soon as the answer is complete.

        Token counts are the usage the stream's last chunk carries: servers send it at the
        end when asked (`stream_options.include_usage`), some with every chunk. Without it,
        the completion tokens are the chunks that carried text (one token each) and the
        prompt tokens are counted by the server's tokenizer (`PromptCounter`), or, where it
        has none to offer, in a one-token request of the same messages.
        """
        stream = self._open_stream(request)
        with self._errors("chat"), stream:
            answer = read_until_complete(stream, _chunk_text, complete)
        if answer.last is None:  # llama-cpp-python's server, e.g. for a prompt over n_ctx
            raise GenerationFailed(f"{self.spec}: the server ended the chat stream unanswered")
        usage = answer.last.usage
        if usage is not None:
            return Generation(answer.text, usage.prompt_tokens, usage.completion_tokens, False)
        prompt_tokens = self._prompt_counter.count(request)
        return Generation(answer.text, prompt_tokens, answer.pieces, False)

    def _open_stream(self, request: GenerationRequest) -> openai.Stream[ChatCompletionChunk]:
        """Start streaming a free answer, asking for its usage unless the server refused to."""
        while True:
            optional = self._optional(request, stream_options={"include_usage": True})
            try:
                with self._errors("chat", *optional):
                    return self.client.chat.completions.create(
                        model=self.spec.name,
                        messages=_messages(request),
                        temperature=request.temperature,
                        seed=request.seed,
                        max_tokens=request.max_tokens,
                        stream=True,
                        extra_body=optional,  # typed differently across client versions
                    )
            except _Refused as refused:
                self._refused.add(refused.field)

    def _optional(self, request: GenerationRequest, **fields: Any) -> dict[str, Any]:
        """The request's fields beyond the OpenAI API's (`repeat_penalty`, and `fields`), but
        those the server refused."""
        wanted = {"repeat_penalty": request.repeat_penalty} | fields
        return {name: value for name, value in wanted.items() if name not in self._refused}

    def _prompt_tokens(self, request: GenerationRequest) -> int:
        """The server's count of the request's prompt tokens, from a one-token request."""
        with self._errors("count prompt tokens"):
            response = self.client.chat.completions.create(
                model=self.spec.name,
                messages=_messages(request),
                temperature=request.temperature,
                seed=request.seed,
                max_tokens=1,
            )
        return response.usage.prompt_tokens if response.usage else 0

    @contextlib.contextmanager
    def _errors(self, what: str, *refusable: str | None) -> Iterator[None]:
        """Map the client's exceptions to tipbench's, in requests and while streaming;
        `_Refused` if the server refused one of the request fields `refusable`."""
        spec, url = self.spec, self.options.openai_base_url
        try:
            yield
        except openai.APITimeoutError:
            raise BackendUnavailable(f"{spec}: the server at {url} timed out ({what})") from None
        except openai.APIConnectionError:
            raise BackendUnavailable(f"{spec}: cannot reach the server at {url}") from None
        except openai.APIStatusError as exc:
            if refused := _refused_field(exc, {f for f in refusable if f is not None}):
                raise _Refused(refused) from None
            raise GenerationFailed(
                f"{spec}: {what} failed with HTTP {exc.status_code}: {exc.message}"
            ) from None
        except openai.APIError as exc:  # an error event in a stream
            raise GenerationFailed(f"{spec}: {what} failed: {exc.message}") from None
        except _TIMEOUTS:  # from a stream, by clients that let them out unwrapped
            raise BackendUnavailable(f"{spec}: the server at {url} timed out ({what})") from None
        except _TRANSPORT_ERRORS:
            raise BackendUnavailable(f"{spec}: cannot reach the server at {url}") from None


def _messages(request: GenerationRequest) -> list[ChatCompletionMessageParam]:
    return cast("list[ChatCompletionMessageParam]", request.chat_messages())


def _chunk_text(chunk: ChatCompletionChunk) -> str | None:
    return chunk.choices[0].delta.content if chunk.choices else None


def _refused_field(exc: openai.APIStatusError, fields: set[str]) -> str | None:
    """Which of the request's `fields` the server refused (None: it failed otherwise)."""
    text = str(exc.body if exc.body is not None else exc.message)
    for field, hint in _REFUSAL_HINTS.items():
        if field not in fields:
            continue
        if exc.status_code in (400, 422) and hint in text:
            return field
        # llama-cpp-python's server answers request validation errors with HTTP 500
        if exc.status_code == 500 and field in text:
            return field
    return None


class _Refused(Exception):
    """The server refused a request field (a structured-output style, stream options, a
    sampling field)."""

    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field
