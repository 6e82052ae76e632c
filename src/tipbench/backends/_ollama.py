"""The Ollama backend, on Ollama's native API (`/api/chat`, `/api/show`, `/api/ps`).

Only the native API honours `keep_alive`, which is how a model is loaded once for its
block and unloaded (`keep_alive: 0`) when the block ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, ClassVar, cast

import httpx
import ollama
from ollama import ChatResponse

from tipbench._errors import BackendUnavailable, GenerationFailed, ModelNotFound
from tipbench.backends._base import Backend, Generation, GenerationRequest, ModelInfo
from tipbench.backends._spec import parse_size
from tipbench.backends._streaming import read_until_complete

_UNLOAD_WAIT_S = 10.0


class OllamaBackend(Backend):
    parallel_requests: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = ollama.Client(host=self.options.ollama_url, timeout=self.options.timeout_s)

    def describe(self) -> ModelInfo:
        with self._errors("show"):
            show = self.client.show(self.spec.name)
        info = show.modelinfo or {}
        details = show.details
        count = info.get("general.parameter_count")
        if count is None and details is not None and details.parameter_size:
            try:
                count = parse_size(details.parameter_size)
            except ValueError:
                count = None
        quantization = details.quantization_level if details is not None else ""
        return ModelInfo(
            parameter_count=int(count) if count is not None else None,
            identity=f"{self.spec.name}:{count}:{quantization}",
        )

    def load(self) -> None:
        with self._errors("load"):
            self.client.chat(self.spec.name, messages=[], keep_alive=self.options.keep_alive)

    def unload(self) -> None:
        """Ask Ollama to unload now (`keep_alive: 0`) and wait until `/api/ps` shows it gone.

        Ollama unloads in the background, so the next model must not load before then.

        Raises:
            BackendUnavailable: the model is still resident after the wait.
        """
        name = _canonical(self.spec.name)
        with self._errors("unload"):
            self.client.chat(self.spec.name, messages=[], keep_alive=0)
            deadline = time.monotonic() + _UNLOAD_WAIT_S
            while True:
                resident = {_canonical(m.model or m.name or "") for m in self.client.ps().models}
                if name not in resident:
                    return
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
        raise BackendUnavailable(
            f"{self.spec}: Ollama at {self.options.ollama_url} still lists the model as loaded "
            f"{_UNLOAD_WAIT_S:g}s after the unload request"
        )

    def generate(self, request: GenerationRequest) -> Generation:
        if request.complete is not None and request.constraint == "none":
            return self._generate_until_complete(request, request.complete)
        with self._errors("chat"):
            response = self.client.chat(
                self.spec.name,
                messages=request.chat_messages(),
                format=request.json_schema or ("json" if request.json_object else None),
                options=_options(request),
                keep_alive=self.options.keep_alive,
                stream=False,
            )
        return Generation(
            text=response.message.content or "",
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
            structured=request.constraint != "none",
        )

    def _generate_until_complete(
        self, request: GenerationRequest, complete: Callable[[str], bool]
    ) -> Generation:
        """Stream a free answer and close the stream as soon as the answer is complete.

        Token counts are those of the stream's last chunk (`done`) when it ended by itself.
        Stopped early, the completion tokens are the chunks that carried text (Ollama streams
        one token per chunk), and the prompt tokens are Ollama's count of the same messages
        in a one-token request (Ollama counts the whole prompt, cached or not).
        """
        with self._errors("chat"):
            # the client's stream is a generator: closing it closes the HTTP response
            chunks = cast(
                "Generator[ChatResponse, None, None]",
                self.client.chat(
                    self.spec.name,
                    messages=request.chat_messages(),
                    options=_options(request),
                    keep_alive=self.options.keep_alive,
                    stream=True,
                ),
            )
            with contextlib.closing(chunks):
                answer = read_until_complete(chunks, lambda chunk: chunk.message.content, complete)
        last = answer.last
        if last is None:
            raise GenerationFailed(f"{self.spec}: Ollama ended the chat stream unanswered")
        if last.done:
            return Generation(answer.text, last.prompt_eval_count or 0, last.eval_count or 0, False)
        return Generation(answer.text, self._prompt_tokens(request), answer.pieces, False)

    def _prompt_tokens(self, request: GenerationRequest) -> int:
        """Ollama's count of the request's prompt tokens, from a one-token request."""
        with self._errors("count prompt tokens"):
            response = self.client.chat(
                self.spec.name,
                messages=request.chat_messages(),
                options=_options(request) | {"num_predict": 1},
                keep_alive=self.options.keep_alive,
                stream=False,
            )
        return response.prompt_eval_count or 0

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Turn the ollama client's exceptions into tipbench's error tree."""
        spec, url = self.spec, self.options.ollama_url
        try:
            yield
        except ollama.ResponseError as exc:
            if exc.status_code == 404 and what in ("show", "load"):
                raise ModelNotFound(f"{spec}: Ollama at {url} has no such model") from None
            if exc.status_code == -1:  # an error line in a stream
                raise GenerationFailed(f"{spec}: Ollama {what} failed: {exc.error}") from None
            raise GenerationFailed(
                f"{spec}: Ollama {what} failed with HTTP {exc.status_code}: {exc.error}"
            ) from None
        except httpx.TimeoutException:
            raise BackendUnavailable(f"{spec}: Ollama at {url} timed out ({what})") from None
        except (ConnectionError, httpx.TransportError):
            raise BackendUnavailable(f"{spec}: cannot reach Ollama at {url}") from None


def _options(request: GenerationRequest) -> dict[str, Any]:
    return {
        "temperature": request.temperature,
        "seed": request.seed,
        "repeat_penalty": request.repeat_penalty,
        "num_predict": request.max_tokens,
    }


def _canonical(name: str) -> str:
    """Ollama's full model name: a name without a tag means `:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
