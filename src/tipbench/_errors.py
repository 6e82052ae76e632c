"""The exceptions tipbench raises, all derived from `TipbenchError`.

The CLI turns any of them into a one-line message and a non-zero exit:

    TipbenchError
    ├── SuiteError           a suite folder is malformed (names the file and the problem)
    ├── ConfigError          an option or config value is invalid (prompt version, model spec, ...)
    ├── TrackingError        the MLflow store cannot be reached or used
    │   └── ExperimentNotFound   the store has no such experiment
    └── BackendError         something about a model backend
        ├── BackendMissing       the optional package a backend needs is not installed
        ├── ModelNotFound        the backend does not know the model
        ├── ModelTooLarge        the size guard refused the model
        ├── ModelSizeUnknown     no metadata tells the model's size
        └── TransientError       worth retrying: connection, timeout, 5xx, unparsable output
            ├── BackendUnavailable   the server cannot be reached (or timed out)
            └── GenerationFailed     the server answered with an error or unusable output
                └── UnusableOutput   the model answered, with nothing usable (retried at once)
"""

from __future__ import annotations


class TipbenchError(Exception):
    """Base class of every error tipbench raises on purpose."""


class SuiteError(TipbenchError):
    """A suite folder is malformed."""


class ConfigError(TipbenchError):
    """An option or configuration value is invalid."""


class TrackingError(TipbenchError):
    """The MLflow tracking store cannot be reached or used."""


class ExperimentNotFound(TrackingError):
    """The tracking store has no experiment of that name."""


class BackendError(TipbenchError):
    """A model backend failed."""


class BackendMissing(BackendError):
    """The optional dependency a backend needs is not installed."""


class ModelNotFound(BackendError):
    """The backend does not know the requested model."""


class ModelTooLarge(BackendError):
    """The size guard refused a model above `max_model_b`."""


class ModelSizeUnknown(BackendError):
    """No metadata tells the model's parameter count."""


class TransientError(BackendError):
    """A failure that may go away on retry."""


class BackendUnavailable(TransientError):
    """The backend server could not be reached, or timed out."""


class GenerationFailed(TransientError):
    """The backend answered with an error, or with output that cannot be parsed."""


class UnusableOutput(GenerationFailed):
    """The model answered, but nothing in the answer can be used. The retry asks again at
    once (with the next seed): waiting helps a server that failed, not a model's answer."""
