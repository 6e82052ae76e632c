"""A job's log and its progress events: followed as they grow, read back for the API.

`tipbench run` writes two files. Its log (`<id>.log`) is for people: progress lines, its
report, `error: …` on a bad input. Its progress events (`<id>.events.jsonl`, the file
`TIPBENCH_PROGRESS_EVENTS` names; see `tipbench._progress_events`) are for the runner: the
job's progress comes from them alone, so rewording the log changes nothing here. Both grow
by one section per attempt; each attempt is followed from where the file ended when it
started. The log's last line only names what went wrong when a run crashed without saying.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from tipbench._progress_events import (
    ErrorReported,
    ModelLoading,
    PhaseStarted,
    ProgressEvent,
    ProgressEventError,
    StepDone,
    TotalKnown,
    read_event,
)
from tipbench._redact import redact_text
from tipbench.admin._jobs import Progress

MAX_ERROR_CHARS = 500
MAX_LOG_BYTES = 4 * 1024 * 1024


class _Appended:
    """The whole lines appended to a file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.offset = path.stat().st_size  # what earlier attempts wrote is not followed
        except FileNotFoundError:
            self.offset = 0
        self._partial = ""

    def lines(self) -> list[str]:
        try:
            with self.path.open("rb") as file:
                file.seek(self.offset)
                chunk = file.read()
        except OSError:
            return []
        self.offset += len(chunk)
        lines = (self._partial + chunk.decode("utf-8", errors="replace")).split("\n")
        self._partial = lines.pop()
        return [line.rstrip("\r") for line in lines]

    def rest(self) -> str:
        """The last line, which has no newline (the writer has ended)."""
        rest, self._partial = self._partial, ""
        return rest


class JobFollower:
    """Follows one attempt of a job: its progress from the events, and the last line of
    its log. Create it before the attempt's process starts."""

    def __init__(self, log_path: Path, events_path: Path, progress: Progress) -> None:
        self.progress = progress
        self.error: str | None = None  # the attempt's one-line error, if it wrote one
        self.failed: str | None = None  # the last cell or candidate that failed
        self.last_line = ""  # the log's last non-empty line
        self._log = _Appended(log_path)
        self._events = _Appended(events_path)

    def poll(self) -> bool:
        """Read what was appended; whether the progress changed."""
        before = self.progress
        for line in self._events.lines():
            self._take(line)
        self._log_lines(self._log.lines())
        return self.progress != before

    def error_line(self, exit_code: int) -> str:
        """What went wrong, in one line: the run's error event, else its last failed cell or
        candidate, else the signal that killed it, else the last line of its log."""
        self.poll()
        self._take(self._events.rest())
        self._log_lines([self._log.rest()])
        if self.error or self.failed:
            return (self.error or self.failed or "")[:MAX_ERROR_CHARS]
        if exit_code < 0:
            return f"killed by signal {-exit_code}"
        return (self.last_line or f"tipbench run exited with code {exit_code}")[:MAX_ERROR_CHARS]

    def _take(self, line: str) -> None:
        if not line.strip():
            return
        try:
            event = read_event(line)
        except ProgressEventError:
            return  # not this format (another tipbench wrote it): it tells us nothing
        self.progress = progress_after(self.progress, event)
        if isinstance(event, ErrorReported):
            self.error = event.message.strip()
        elif isinstance(event, StepDone) and event.error is not None:
            self.failed = f"failed: {event.item}: {event.error}"

    def _log_lines(self, lines: list[str]) -> None:
        for line in lines:
            if line.strip():
                self.last_line = line.strip()


def progress_after(progress: Progress, event: ProgressEvent) -> Progress:
    """The progress once `event` happened."""
    if isinstance(event, PhaseStarted):
        return replace(progress, phase=event.phase)
    if isinstance(event, TotalKnown | StepDone):
        if event.unit in ("cells", "evaluations"):  # an optimization's steps are its budget
            return replace(progress, cells_done=event.done, cells_total=event.total)
        return replace(progress, judged=event.done, judge_total=event.total)
    if isinstance(event, ModelLoading) and event.unit == "candidates":
        return replace(progress, judge_loading=event.model if event.loading else None)
    return progress


def open_log(path: Path) -> BinaryIO:
    """A job's log opened for appending; created readable by its owner only (0600)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")


def read_log(path: Path, tail: int | None = None) -> str:
    """A job's log (its last `MAX_LOG_BYTES` at most), or its last `tail` lines."""
    try:
        with path.open("rb") as log:
            size = log.seek(0, 2)
            log.seek(max(0, size - MAX_LOG_BYTES))
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    if tail is not None:
        lines = text.splitlines(keepends=True)
        text = "".join(lines[-tail:])
    return redact_text(text)  # a URI a run printed with its credentials stays in the file
