"""The backend interface: describe a model, load it, generate, unload it."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from tipbench._errors import ModelSizeUnknown, ModelTooLarge
from tipbench.backends._spec import ModelSpec

if TYPE_CHECKING:
    from tipbench.backends._threads import ThreadChoice
    from tipbench.suite import Message

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OPENAI_BASE_URL = "http://localhost:8000/v1"
#: Hosts that name this machine: a server there runs here, and serves no other machine.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class BackendOptions:
    """Where the servers are and how patient to be with them."""

    ollama_url: str = field(
        default_factory=lambda: os.environ.get("OLLAMA_HOST", DEFAULT_OLLAMA_URL)
    )
    openai_base_url: str = field(
        default_factory=lambda: os.environ.get("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL)
    )
    timeout_s: float = 300.0
    n_ctx: int = 2048
    keep_alive: str = "10m"
    #: Where an embedded model keeps its last warmed prompt for the next process
    #: (`_warmed.py`); None: within the process only.
    warm_dir: Path | None = None


@dataclass(frozen=True)
class ModelInfo:
    """What the backend knows about a model before loading it."""

    parameter_count: int | None
    identity: str  # changes when the weights behind the name change; part of cache keys


#: An answer's form: its fixed text, and tuples of the values a slot in it may take.
AnswerForm = tuple[str | tuple[str, ...], ...]

#: How a request constrains its answer: to a JSON schema, to any JSON object, or not at all.
Constraint = Literal["schema", "json", "none"]


@dataclass(frozen=True)
class GenerationRequest:
    """One chat completion request.

    With `json_schema` the answer is constrained to that schema (a grammar evaluated on
    every sampled token, which costs speed); with `json_object` (and no schema) to some
    JSON object; with neither the backend generates freely. A free request may say when its
    answer needs no more tokens (`complete`, given the text so far: collect's `AnswerDone`):
    the backend then streams and stops there instead of running on to `max_tokens`, as a
    grammar ends a constrained answer by itself.

    Every backend sends `repeat_penalty` (1.0: none) rather than leave it to the server:
    llama_cpp.server, Ollama and LM Studio penalise repeats by default (1.1), which makes a
    model's answers through them differ from its embedded ones and breaks a small model's
    JSON (SmolLM2-135M's free answers: 6 of 24 parse with it, 16 without).
    """

    messages: tuple[Message, ...]
    temperature: float
    seed: int
    max_tokens: int
    json_schema: dict[str, Any] | None = None
    json_object: bool = False
    repeat_penalty: float = 1.0
    form: AnswerForm | None = None
    complete: Callable[[str], bool] | None = field(default=None, compare=False)

    @property
    def constraint(self) -> Constraint:
        if self.json_schema is not None:
            return "schema"
        return "json" if self.json_object else "none"

    def chat_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class Generation:
    """A backend's answer to a request."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    structured: bool  # the output was constrained (by a JSON schema or to a JSON object)


class Backend(ABC):
    """A model behind one backend. Use as a context manager: loaded inside, unloaded after.

    Subclasses implement `describe`, `load`, `unload` and `generate`; `generate` raises
    `TransientError` subclasses for failures worth retrying.
    """

    #: Whether the backend serves concurrent requests (servers do; the embedded model does not).
    parallel_requests: ClassVar[bool] = False
    #: Whether `top_logprobs` asks the model (a request) rather than answering None.
    gives_logprobs: ClassVar[bool] = False
    #: What a schema-constrained answer token costs, in free answer tokens: the grammar is
    #: checked on every sampled token. A fixed count per kind of backend or server, so that
    #: the choice of path it weighs (`collect/_path_choice.py`) never depends on the clock.
    #: Servers: llama_cpp.server took 53 ms a constrained token to 32 ms a free one on
    #: 2026-11-29 (1.65, whatever the schema; 1.45 on 11-26): it checks the grammar on the
    #: whole vocabulary before top-k (`bench/README.md`, `structured_server.py`), as Ollama
    #: does; llama.cpp's llama-server costs less (`_openai.py`).
    constrained_token_cost: float = 1.65

    def __init__(self, spec: ModelSpec, options: BackendOptions) -> None:
        self.spec = spec
        self.options = options

    @abstractmethod
    def describe(self) -> ModelInfo:
        """The model's size and identity, from metadata, without loading it."""

    @abstractmethod
    def load(self) -> None:
        """Make the model resident (once per block of cells)."""

    @abstractmethod
    def unload(self) -> None:
        """Free the model; safe to call when it is not loaded."""

    @abstractmethod
    def generate(self, request: GenerationRequest) -> Generation:
        """Answer one request with the loaded model."""

    @property
    def model_file(self) -> Path | None:
        """The file the model's weights are read from, where the backend reads them itself
        (None: a server holds them)."""
        return None

    def top_logprobs(self, prompt: str, n: int) -> dict[str, float] | None:
        """The model's `n` likeliest first tokens after `prompt` (raw text, no chat template)
        and their log-probabilities, greedily: what recognises a model whose file is not
        here (`collect/_known_paths.py`). None where the backend or model cannot say."""
        return None

    @property
    def threads(self) -> ThreadChoice | None:
        """The threads the loaded model runs on in this process, and why; None for a model
        run elsewhere (a server) or not loaded."""
        return None

    def warm(self, request: GenerationRequest) -> None:
        """Evaluate `request`'s prompt now, where the backend keeps it for the requests that
        begin the same way (a prefix cache); a backend without one does nothing. Its answer
        is not used: what later requests are answered does not depend on it."""
        return None  # no prefix cache to fill

    def __enter__(self) -> Backend:
        self.load()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.unload()


def check_size(
    spec: ModelSpec, info: ModelInfo, max_model_b: float, allow_unknown_size: bool = False
) -> int | None:
    """Apply the size guard; return the parameter count it went by.

    Real metadata wins; a size declared in the spec (`@1.5B`) stands in only where the
    backend reports none. Unknown sizes are refused unless `allow_unknown_size`.

    Raises:
        ModelTooLarge: the model has more than `max_model_b` billion parameters.
        ModelSizeUnknown: no size is known and unknown sizes are not allowed.
    """
    count = info.parameter_count if info.parameter_count is not None else spec.declared_parameters
    if count is None:
        if allow_unknown_size:
            return None
        raise ModelSizeUnknown(
            f"{spec}: the backend does not report the model's size; declare it as "
            f"'{spec}@1.5B' or pass --allow-unknown-size"
        )
    if count > max_model_b * 1e9:
        raise ModelTooLarge(
            f"{spec} has {count / 1e9:.2f}B parameters, over the limit of {max_model_b:g}B "
            "(--max-model-b)"
        )
    return count
