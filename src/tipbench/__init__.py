"""tipbench: choose, judge and promote the small LLM and prompt that write short personal tips."""

from tipbench._errors import (
    BackendError,
    BackendMissing,
    BackendUnavailable,
    ConfigError,
    ExperimentNotFound,
    GenerationFailed,
    ModelNotFound,
    ModelSizeUnknown,
    ModelTooLarge,
    SuiteError,
    TipbenchError,
    TrackingError,
    TransientError,
    UnusableOutput,
)

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "BackendMissing",
    "BackendUnavailable",
    "ConfigError",
    "ExperimentNotFound",
    "GenerationFailed",
    "ModelNotFound",
    "ModelSizeUnknown",
    "ModelTooLarge",
    "SuiteError",
    "TipbenchError",
    "TrackingError",
    "TransientError",
    "UnusableOutput",
    "__version__",
]
