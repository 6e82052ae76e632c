"""The OpenAI-compatible backend: vLLM, llama.cpp's servers, LM Studio, hosted APIs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, ClassVar

import openai

from tipbench._errors import BackendUnavailable, GenerationFailed, ModelNotFound
from tipbench.backends._base import Backend, Generation, GenerationRequest, ModelInfo


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = openai.OpenAI(
            base_url=self.options.openai_base_url,
            api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=self.options.timeout_s,
            max_retries=0,  # tipbench retries with its own policy
        )
        # which of _response_formats the server accepted, per constraint
        self._format_index: dict[str, int] = {}

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
        return ModelInfo(
            parameter_count=int(count) if count else None,
            identity=f"{self.options.openai_base_url}|{self.spec.name}|{model.created}",
        )

    def load(self) -> None:
        """Nothing to do: the server loads models itself."""

    def unload(self) -> None:
        """Nothing to do: the OpenAI API has no unload call."""

    def generate(self, request: GenerationRequest) -> Generation:
        formats = _response_formats(request)
        constraint = request.constraint
        while True:
            index = min(self._format_index.get(constraint, 0), len(formats) - 1)
            response_format = formats[index]
            extra: dict[str, Any] = {"response_format": response_format} if response_format else {}
            can_fall_back = index < len(formats) - 1
            try:
                with self._errors("chat", can_fall_back=can_fall_back):
                    response = self.client.chat.completions.create(
                        model=self.spec.name,
                        messages=request.chat_messages(),  # type: ignore[arg-type]
                        temperature=request.temperature,
                        seed=request.seed,
                        max_tokens=request.max_tokens,
                        **extra,
                    )
            except _FormatRefused:
                # concurrent requests may all be refused the same style: move on by one only
                accepted = self._format_index.get(constraint, 0)
                self._format_index[constraint] = max(accepted, index + 1)
                continue
            if not response.choices:
                raise GenerationFailed(f"{self.spec}: the server answered without a choice")
            usage = response.usage
            return Generation(
                text=response.choices[0].message.content or "",
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                structured=response_format is not None,
            )

    @contextlib.contextmanager
    def _errors(self, what: str, can_fall_back: bool = False) -> Iterator[None]:
        """Map the client's exceptions to tipbench's; `_FormatRefused` if a style was refused."""
        spec, url = self.spec, self.options.openai_base_url
        try:
            yield
        except openai.APITimeoutError:
            raise BackendUnavailable(f"{spec}: the server at {url} timed out ({what})") from None
        except openai.APIConnectionError:
            raise BackendUnavailable(f"{spec}: cannot reach the server at {url}") from None
        except openai.APIStatusError as exc:
            if can_fall_back and _refuses_format(exc):
                raise _FormatRefused from None
            raise GenerationFailed(
                f"{spec}: {what} failed with HTTP {exc.status_code}: {exc.message}"
            ) from None


def _refuses_format(exc: openai.APIStatusError) -> bool:
    """Whether the server refused the request's `response_format` (rather than failing)."""
    text = str(exc.body if exc.body is not None else exc.message)
    if exc.status_code in (400, 422):
        return "format" in text
    # llama-cpp-python's server answers request validation errors with HTTP 500
    return exc.status_code == 500 and "response_format" in text


class _FormatRefused(Exception):
    """The server refused a structured-output style; try the next one."""
