"""What every model phase (collect, the automatic judge) shares: its settings' common part,
its silent progress, and its result with the exit-code rule."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tipbench.backends import (
    DEFAULT_OLLAMA_URL,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_STRUCTURED,
    BackendOptions,
    StructuredMode,
)

DEFAULT_EXPERIMENT = "tip-bench-auto"

ExperimentName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]

#: The exit code of a phase stopped by Ctrl-C (or SIGTERM), as a shell reports SIGINT.
EXIT_INTERRUPTED = 130


class SilentProgress:
    """Progress that nobody watches: every phase's progress protocol, doing nothing."""

    def begin(self, total: int, done: int) -> None: ...
    def start(self, label: str) -> None: ...
    def advance(self, *args: Any, **kwargs: Any) -> None: ...
    def note(self, message: str) -> None: ...
    def loading(self, model: str, loading: bool) -> None: ...


@dataclass(kw_only=True)
class PhaseResult:
    """What a phase left undone: `exit_code` is 0 only if everything was done and written."""

    failed: list[tuple[str, str]] = field(default_factory=list)  # (item, error)
    unwritten: list[tuple[str, str]] = field(default_factory=list)  # (item, error) not in MLflow
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 1 when an item failed or was not written, else 0."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        return 1 if self.failed or self.unwritten else 0


class PhaseConfig(BaseModel):
    """The settings every model phase takes: where, which servers, how large a model may be.

    Validated the same way from the CLI, the API and the DAG.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: ExperimentName = DEFAULT_EXPERIMENT
    max_model_b: float = Field(default=4.0, gt=0.0, le=1000.0)
    allow_unknown_size: bool = False
    ollama_url: str = Field(
        default_factory=lambda: os.environ.get("OLLAMA_HOST", DEFAULT_OLLAMA_URL)
    )
    openai_base_url: str | None = Field(default_factory=lambda: os.environ.get("OPENAI_BASE_URL"))
    suite: str | None = None
    #: Where to pay for constrained output (see `tipbench.backends._structured`): collect's
    #: `auto` generates freely and asks again with the schema only for answers that do not
    #: parse; the judge's `auto` is its score schema.
    structured: StructuredMode = DEFAULT_STRUCTURED

    def backend_options(self, **overrides: Any) -> BackendOptions:
        """Where the backends' servers are, with `overrides` (e.g. `n_ctx`)."""
        return BackendOptions(
            ollama_url=self.ollama_url,
            openai_base_url=self.openai_base_url or DEFAULT_OPENAI_BASE_URL,
            **overrides,
        )
