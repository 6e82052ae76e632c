"""The scaffold of a model phase: open a model's backend checked, keep it resident while used.

Collect and the automatic judge (and the DAG tasks that call them) open a backend, apply
the size guard before anything is loaded, then keep exactly one model in memory while they
work with it: `open_checked` and `resident` are those two steps, written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tipbench._errors import BackendError
from tipbench.backends._base import Backend, BackendOptions, ModelInfo, check_size
from tipbench.backends._registry import open_backend
from tipbench.backends._retry import RetryPolicy, call_with_retries
from tipbench.backends._spec import ModelSpec


@dataclass(frozen=True)
class CheckedBackend:
    """A backend whose model passed the size guard; nothing is loaded yet."""

    backend: Backend
    info: ModelInfo  # what the backend reports: size, identity (which changes with the weights)


def open_checked(
    spec: ModelSpec,
    options: BackendOptions,
    max_model_b: float,
    allow_unknown_size: bool = False,
) -> CheckedBackend:
    """Open the backend of `spec` and apply the size guard, before anything is loaded.

    Raises:
        ModelNotFound: The backend does not know the model.
        BackendUnavailable: The backend's server cannot be reached.
        ModelTooLarge: The model is over `max_model_b` billion parameters.
        ModelSizeUnknown: No size is known and unknown sizes are not allowed.
    """
    return checked(open_backend(spec, options), max_model_b, allow_unknown_size)


def checked(
    backend: Backend, max_model_b: float, allow_unknown_size: bool = False
) -> CheckedBackend:
    """Apply the size guard to a backend already made (see `open_checked`)."""
    info = backend.describe()
    check_size(backend.spec, info, max_model_b, allow_unknown_size)
    return CheckedBackend(backend, info)


@contextmanager
def resident(
    backend: Backend, retry: RetryPolicy, note: Callable[[str], None] = lambda _: None
) -> Iterator[Backend]:
    """Load the backend's model (with retries) and keep it in memory for the `with` block.

    The model is unloaded when the block ends, also on an error, on Ctrl-C, and when Ctrl-C
    comes during the load. `note` hears what happens ("loading …", the threads an embedded
    model runs on, "unloading …"); a failed
    unload is only noted, so that it never hides what the block raised.

    Raises:
        BackendError: The model could not be loaded, after retries.
    """
    note(f"loading {backend.spec}")
    try:
        call_with_retries(lambda _: backend.load(), retry)
        if backend.threads is not None:
            note(f"{backend.spec} runs on {backend.threads.describe()}")
        yield backend
    finally:
        note(f"unloading {backend.spec}")
        try:
            backend.unload()
        except BackendError as exc:
            note(f"could not unload {backend.spec}: {exc}")
