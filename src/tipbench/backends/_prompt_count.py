"""Count a chat request's prompt tokens on a server that sends no usage in a stream.

llama-cpp-python's server ignores `stream_options.include_usage`, and llama.cpp's sends the
usage in a stream's last chunk, which a stream closed early never reads, so a streamed answer
arrives without its prompt's token count. Asking for it with a one-token request of the same
messages costs a request per answer. Instead, the server's tokenizer counts each message's
content (no generation: llama-cpp-python's `/extras/tokenize/count`, llama.cpp's
`/tokenize`), and the chat template's own tokens (role markers, BOS) are learned once per
sequence of roles from one counted request: the template wraps each message in the same
markers, so what it adds does not depend on the contents. Every later request that reports
usage for messages just counted checks that figure and corrects it. A server without a
tokenizer gets the one-token request, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tipbench.backends._base import GenerationRequest

Roles = tuple[str, ...]


@dataclass(frozen=True)
class Tokenizer:
    """A server's tokenizer endpoint (at the server's root): the body it takes for a text
    and a model's name, and the count in its answer (None: not there)."""

    path: str
    body: Callable[[str, str], dict[str, Any]]
    count: Callable[[dict[str, Any]], int | None]


#: Tried in this order until one answers; the first that does is kept.
TOKENIZERS = (
    # llama-cpp-python's server: {"input": TEXT, "model": NAME} → {"count": N}
    Tokenizer(
        "/extras/tokenize/count",
        lambda text, model: {"input": text, "model": model},
        lambda answer: answer.get("count"),
    ),
    # llama.cpp's llama-server: {"content": TEXT} → {"tokens": [...]}, no special tokens
    Tokenizer(
        "/tokenize",
        lambda text, model: {"content": text},
        lambda answer: len(tokens) if isinstance(tokens := answer.get("tokens"), list) else None,
    ),
)
#: A tokenizer not yet known to answer is not there on this server (another may be).
_NOT_THIS_TOKENIZER = (400, 404, 405, 422)


class PromptCounter:
    """Prompt token counts from the server's tokenizer and a learned template overhead."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout_s: float,
        counted_request: Callable[[GenerationRequest], int],
    ) -> None:
        """`counted_request` is the fallback: the prompt count of a one-token request."""
        root = base_url.rstrip("/").removesuffix("/v1")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=root, headers=headers, timeout=timeout_s)
        self._model = model
        self._counted_request = counted_request
        self._untried = list(TOKENIZERS)  # until one answers; none left: the server has none
        self._tokenizer: Tokenizer | None = None  # the one that answered
        self._overhead: dict[Roles, int] = {}  # what the template adds, per role sequence
        self._contents: dict[tuple[str, ...], int] = {}  # recent contents' token counts
        self._lock = threading.Lock()

    def count(self, request: GenerationRequest) -> int:
        """The request's prompt tokens, without generating when the server can tokenize."""
        roles = tuple(role for role, _ in request.messages)
        contents = self._count_contents(request)
        overhead = self._overhead.get(roles)
        if contents is not None and overhead is not None:
            return contents + overhead
        exact = self._counted_request(request)
        if contents is not None:
            with self._lock:
                self._overhead[roles] = exact - contents
        return exact

    def observe(self, request: GenerationRequest, prompt_tokens: int) -> None:
        """A server-reported count for `request`: corrects the learned overhead when the
        same messages were just counted (a schema retry of a free answer, say)."""
        key = tuple(content for _, content in request.messages)
        contents = self._contents.get(key)
        if contents is None or prompt_tokens <= 0:
            return
        with self._lock:
            self._overhead[tuple(role for role, _ in request.messages)] = prompt_tokens - contents

    def close(self) -> None:
        self._http.close()

    def _count_contents(self, request: GenerationRequest) -> int | None:
        """The sum of the contents' token counts, or None where the server cannot say."""
        key = tuple(content for _, content in request.messages)
        if (known := self._contents.get(key)) is not None:
            return known
        total = 0
        for content in key:
            count = self._count_text(content)
            if count is None:
                return None
            total += count
        with self._lock:
            if len(self._contents) >= 64:  # only the last few requests are ever looked up
                self._contents.pop(next(iter(self._contents)))
            self._contents[key] = total
        return total

    def _count_text(self, text: str) -> int | None:
        """`text`'s tokens by the server's tokenizer, or None where it cannot say now."""
        while (tokenizer := self._tokenizer or next(iter(self._untried), None)) is not None:
            try:
                answer = self._http.post(tokenizer.path, json=tokenizer.body(text, self._model))
            except httpx.HTTPError:
                return None  # a passing fault: this request falls back, the next tries again
            if self._tokenizer is None and answer.status_code in _NOT_THIS_TOKENIZER:
                with self._lock:
                    if tokenizer in self._untried:
                        self._untried.remove(tokenizer)
                continue
            try:
                body = answer.json() if answer.is_success else None
            except ValueError:  # not JSON
                body = None
            count = tokenizer.count(body) if isinstance(body, dict) else None
            if not isinstance(count, int):
                return None
            self._tokenizer = tokenizer
            return count
        return None
