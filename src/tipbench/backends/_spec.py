"""Model specs: `llamacpp:NAME_OR_PATH`, `ollama:TAG` (or a bare tag), `openai:MODEL`."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from tipbench._errors import ConfigError

BackendName = Literal["llamacpp", "ollama", "openai"]
BACKEND_NAMES: tuple[BackendName, ...] = ("llamacpp", "ollama", "openai")

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmbt])$", re.IGNORECASE)
_SIZE_SUFFIX = re.compile(r"@(\d+(?:\.\d+)?[kmbtKMBT])$")
_SCALE = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
# A bare `word:tail` whose word could be a backend's name and whose tail is not an Ollama
# tag's size or version (`1.5b`, `3.2`, `latest`) is taken for a mistyped backend prefix
# (`lamacpp:smollm2`, `foo:bar`); `qwen2.5:1.5b` and `hf.co/org/repo:Q4_K_M` stay Ollama tags.
_BACKEND_LIKE = re.compile(r"^[A-Za-z_-]+$")
_OLLAMA_TAG = re.compile(r"^(\d|latest$)")


def _unknown_backend(text: str, prefix: str) -> str:
    known = ", ".join(BACKEND_NAMES)
    close = difflib.get_close_matches(prefix, BACKEND_NAMES, n=1)
    hint = f"did you mean {close[0]}:? " if close else ""
    return (
        f"unknown backend {prefix!r} in model spec {text.strip()!r}: {hint}the backends are "
        f"{known} (an Ollama tag of another shape: ollama:{text.strip()})"
    )


def parse_size(text: str) -> int:
    """A parameter count from a size label such as `135M`, `1.5B` or `4b`."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"not a model size: {text!r} (expected e.g. 135M, 1.5B)")
    return round(float(match.group(1)) * _SCALE[match.group(2).lower()])


@dataclass(frozen=True)
class ModelSpec:
    """Which backend serves a model, the model's name there, and a declared size if any."""

    backend: BackendName
    name: str
    declared_parameters: int | None = None

    def __str__(self) -> str:
        return f"{self.backend}:{self.name}"

    def with_declared_size(self) -> str:
        """The spec with its declared size (`openai:m@3B`), as settings keep it: parsed
        again wherever the spec goes next, it still declares the size (`str` drops it)."""
        count = self.declared_parameters
        if count is None:
            return str(self)
        scale, unit = (1e9, "B") if count >= 1e8 else (1e6, "M")
        return f"{self}@{f'{count / scale:.6f}'.rstrip('0').rstrip('.')}{unit}"

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """Parse a model spec; an `@SIZE` suffix declares the size for servers that hide it.

        Raises:
            ConfigError: if the spec is empty or malformed.
        """
        raw = text.strip()
        declared: int | None = None
        if match := _SIZE_SUFFIX.search(raw):
            declared = parse_size(match.group(1))
            if declared <= 0:
                raise ConfigError(f"bad model spec {text!r}: a declared size must be above 0")
            raw = raw[: match.start()]
        prefix, sep, rest = raw.partition(":")
        backend: BackendName
        if sep and prefix in BACKEND_NAMES:
            backend, name = prefix, rest  # type: ignore[assignment,unused-ignore]
        elif sep and _BACKEND_LIKE.match(prefix) and not _OLLAMA_TAG.match(rest):
            raise ConfigError(_unknown_backend(text, prefix))
        else:
            backend, name = "ollama", raw  # a bare tag such as qwen2.5:1.5b means Ollama
        if not name or any(c.isspace() for c in name):
            raise ConfigError(f"bad model spec {text!r} (expected e.g. llamacpp:smollm2-135m)")
        return cls(backend=backend, name=name, declared_parameters=declared)


def parse_model_list(text: str) -> tuple[ModelSpec, ...]:
    """Parse a comma-separated list of model specs, refusing an empty list or duplicates."""
    specs = tuple(ModelSpec.parse(part) for part in text.split(",") if part.strip())
    if not specs:
        raise ConfigError("no models given")
    names = [str(s) for s in specs]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"model {name} is listed twice")
    return specs
