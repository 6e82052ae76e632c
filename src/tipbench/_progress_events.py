"""Progress events: how far a run is, for programs (a job's panel), beside the human log.

One JSON object per line, each with the format's version `v` and its kind `event`:

    {"v":1,"event":"phase","phase":"collect"}
    {"v":1,"event":"total","unit":"cells","total":24,"done":6}
    {"v":1,"event":"step","unit":"cells","done":7,"total":24,"item":"m|v1|s","error":null}
    {"v":1,"event":"loading","unit":"candidates","model":"llamacpp:smollm2-135m","loading":true}
    {"v":1,"event":"error","message":"error: ollama:x: cannot reach Ollama at …"}
    {"v":1,"event":"finished","exit_code":0}

`total` comes once per phase that counts steps (`done` > 0: a resumed run found that many
already done); `step` once per finished cell or candidate (a failed one with its `error`);
`loading` when a phase starts loading its model (`loading` true) and when the model is
ready (false: the automatic judge has then also evaluated the rubric every request shares);
`error` is the one line a command ends with when it refuses or is interrupted; `finished`
its exit code (a run that crashed has none). The CLI writes them to the file named by
`TIPBENCH_PROGRESS_EVENTS` (the job runner sets it); the Airflow tasks write them to their
task log. Words meant for people (notes, reports) are not events.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from tipbench._errors import TipbenchError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

#: The environment variable naming the file a command appends its progress events to.
EVENTS_VARIABLE = "TIPBENCH_PROGRESS_EVENTS"
#: The format's version; a reader refuses events of another.
FORMAT_VERSION: Final = 1

Phase = Literal["optimize", "collect", "judge", "export", "compare", "report"]
Unit = Literal["cells", "candidates", "evaluations"]

# The events are frozen dataclasses, validated by pydantic when read: pydantic is imported
# by readers only, as every command imports this module and few write events.


@dataclass(frozen=True, kw_only=True)
class PhaseStarted:
    """A phase of the pipeline started (`report`: the command prints what it did)."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["phase"] = "phase"
    phase: Phase


@dataclass(frozen=True, kw_only=True)
class TotalKnown:
    """A phase has `total` steps, `done` of them already done before this run."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["total"] = "total"
    unit: Unit
    total: int
    done: int


@dataclass(frozen=True, kw_only=True)
class StepDone:
    """`item` finished, the `done`-th of `total`; `error` says why if it failed."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["step"] = "step"
    unit: Unit
    done: int
    total: int
    item: str
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelLoading:
    """The phase counting `unit` is loading `model` (`loading`), or has it ready (not)."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["loading"] = "loading"
    unit: Unit
    model: str
    loading: bool


@dataclass(frozen=True, kw_only=True)
class ErrorReported:
    """The one line a command ended with: a refused input, an interruption."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["error"] = "error"
    message: str


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The command ended with `exit_code` (a crash writes none)."""

    v: Literal[1] = FORMAT_VERSION
    event: Literal["finished"] = "finished"
    exit_code: int


ProgressEvent = PhaseStarted | TotalKnown | StepDone | ModelLoading | ErrorReported | Finished


class ProgressEventError(TipbenchError):
    """A line that is not a progress event of this format version."""


def event_line(event: ProgressEvent) -> str:
    """The event as one line of JSON (no newline)."""
    return json.dumps(asdict(event), ensure_ascii=False, separators=(",", ":"))


def read_event(line: str) -> ProgressEvent:
    """The event a line holds.

    Raises:
        ProgressEventError: if it is not JSON, names another format version, or is not an
            event of this one.
    """
    from pydantic import ValidationError

    try:
        data: Any = json.loads(line)
    except ValueError:
        raise ProgressEventError(f"not a progress event: {line[:80]!r}") from None
    version = data.get("v") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise ProgressEventError(f"progress events of format v{version} (this reads v1)")
    try:
        return _event_adapter().validate_python(data)
    except ValidationError as exc:
        raise ProgressEventError(f"not a progress event: {exc.errors()[0]['msg']}") from None


@cache
def _event_adapter() -> TypeAdapter[ProgressEvent]:
    from typing import Annotated

    from pydantic import Field, TypeAdapter

    return TypeAdapter(Annotated[ProgressEvent, Field(discriminator="event")])


class ProgressEvents:
    """Where a process writes its progress events; writes nothing without a `write`.

    Writing is best effort: progress that cannot be written never stops the work.
    """

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write

    @classmethod
    def to_file(cls, path: Path) -> ProgressEvents:
        """Events appended to `path`, one line each, created readable by its owner only."""

        def append(line: str) -> None:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"{line}\n".encode())  # one write per line: never torn
            finally:
                os.close(fd)

        return cls(append)

    @classmethod
    def from_environment(cls) -> ProgressEvents:
        """Events to the file `TIPBENCH_PROGRESS_EVENTS` names; nowhere if it is unset."""
        path = os.environ.get(EVENTS_VARIABLE)
        return cls.to_file(Path(path)) if path else cls()

    @classmethod
    def to_logger(cls, logger: logging.Logger) -> ProgressEvents:
        """Events as log records, one JSON line each (an Airflow task's log)."""
        return cls(lambda line: logger.info("%s", line))

    def emit(self, event: ProgressEvent) -> None:
        if self._write is not None:
            with suppress(OSError):
                self._write(event_line(event))

    def phase(self, phase: Phase) -> None:
        self.emit(PhaseStarted(phase=phase))


class StepCounter:
    """Counts a phase's steps and reports each as an event (what every progress display
    of collect and the automatic judge shares)."""

    def __init__(self, unit: Unit, events: ProgressEvents) -> None:
        self.unit: Unit = unit
        self.events = events
        self.done = 0
        self.total = 0

    def begin(self, total: int, done: int) -> TotalKnown:
        self.total, self.done = total, done
        event = TotalKnown(unit=self.unit, total=total, done=done)
        self.events.emit(event)
        return event

    def loading(self, model: str, loading: bool) -> ModelLoading:
        """The phase's model is loading (`loading`), or ready."""
        event = ModelLoading(unit=self.unit, model=model, loading=loading)
        self.events.emit(event)
        return event

    def step(self, item: str, error: str | None = None, count: int = 1) -> StepDone:
        """`item` finished (`count` steps: a failed cell's remaining candidates are one)."""
        self.done += count
        event = StepDone(unit=self.unit, done=self.done, total=self.total, item=item, error=error)
        self.events.emit(event)
        return event
