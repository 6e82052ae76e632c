"""Backends: where candidates come from (embedded llama.cpp, Ollama, OpenAI-compatible)."""

from tipbench.backends._base import (
    DEFAULT_OLLAMA_URL,
    DEFAULT_OPENAI_BASE_URL,
    AnswerForm,
    Backend,
    BackendOptions,
    Constraint,
    Generation,
    GenerationRequest,
    ModelInfo,
    check_size,
)
from tipbench.backends._llamacpp import resolve_model_path
from tipbench.backends._model_server import model_server_app
from tipbench.backends._registry import open_backend
from tipbench.backends._resident import CheckedBackend, checked, open_checked, resident
from tipbench.backends._retry import RetryPolicy, call_with_retries
from tipbench.backends._spec import BACKEND_NAMES, ModelSpec, parse_model_list, parse_size
from tipbench.backends._structured import (
    DEFAULT_STRUCTURED,
    STRUCTURED_MODES,
    RequestCost,
    RequestRecord,
    StructuredAnswer,
    StructuredMode,
    constraints_for,
    generate_structured,
    path_name,
)

__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_OLLAMA_URL",
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_STRUCTURED",
    "STRUCTURED_MODES",
    "AnswerForm",
    "Backend",
    "BackendOptions",
    "CheckedBackend",
    "Constraint",
    "Generation",
    "GenerationRequest",
    "ModelInfo",
    "ModelSpec",
    "RequestCost",
    "RequestRecord",
    "RetryPolicy",
    "StructuredAnswer",
    "StructuredMode",
    "call_with_retries",
    "check_size",
    "checked",
    "constraints_for",
    "generate_structured",
    "model_server_app",
    "open_backend",
    "open_checked",
    "parse_model_list",
    "parse_size",
    "path_name",
    "resident",
    "resolve_model_path",
]
