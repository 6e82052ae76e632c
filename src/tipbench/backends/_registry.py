"""Backends by name, imported lazily so heavy optional dependencies load only when used."""

from __future__ import annotations

import importlib

from tipbench.backends._base import Backend, BackendOptions
from tipbench.backends._spec import BackendName, ModelSpec

_BACKENDS: dict[BackendName, str] = {
    "llamacpp": "tipbench.backends._llamacpp:LlamaCppBackend",
    "ollama": "tipbench.backends._ollama:OllamaBackend",
    "openai": "tipbench.backends._openai:OpenAIBackend",
}


def open_backend(spec: ModelSpec, options: BackendOptions | None = None) -> Backend:
    """The backend for `spec`, not yet loaded (raises `ModelNotFound` for a bad name)."""
    module_name, _, class_name = _BACKENDS[spec.backend].partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls(spec, options or BackendOptions())
