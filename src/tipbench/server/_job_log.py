"""A job's log: followed as it grows for progress, read back for the API.

`tipbench run` writes plain progress lines when stderr is not a terminal:

    resuming: 6 of 24 cells already recorded
    [7/24] llamacpp:smollm2-135m|v1|student-morning ok
    resuming: 2 of 40 candidates already judged
    [5/40] llamacpp:smollm2-135m|v1|student-morning c2 ok

then its report (`== collect`, …) on stdout, and `error: …` on a bad input.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from tipbench._redact import redact_text
from tipbench.server._jobs import Progress

_STEP = re.compile(r"^\[(\d+)/(\d+)\] \S+( c\d+)?")
_RESUMING = re.compile(r"^resuming: (\d+) of (\d+) (cells|candidates) ")
_ERROR = re.compile(r"^(error|Error|\w+Error): ")
_CELL_FAILED = re.compile(r"^\s*failed: |\] \S+ FAILED: ")
MAX_ERROR_CHARS = 500
MAX_LOG_BYTES = 4 * 1024 * 1024


class LogFollower:
    """Reads the lines appended to a log since the last call and tracks the job's progress."""

    def __init__(self, path: Path, progress: Progress, offset: int = 0) -> None:
        self.path = path
        self.progress = progress
        self.offset = offset
        self.recent: deque[str] = deque(maxlen=200)  # this attempt's last lines
        self._partial = ""

    def poll(self) -> bool:
        """Read what was appended; whether the progress changed."""
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                chunk = log.read()
        except OSError:
            return False
        self.offset += len(chunk)
        lines = (self._partial + chunk.decode("utf-8", errors="replace")).split("\n")
        self._partial = lines.pop()
        before = self.progress
        for line in lines:
            self.feed(line.rstrip("\r"))
        return self.progress != before

    def feed(self, line: str) -> None:
        if line.strip():
            self.recent.append(line)
        self.progress = progress_after(self.progress, line)

    def error_line(self, exit_code: int) -> str:
        """What went wrong, in one line: the `error: …` line, else a failed cell, else the
        last line the run wrote."""
        if self._partial.strip():
            self.feed(self._partial)
            self._partial = ""
        lines = list(self.recent)
        for pattern in (_ERROR, _CELL_FAILED):
            found = [line for line in lines if pattern.search(line)]
            if found:
                return found[-1].strip()[:MAX_ERROR_CHARS]
        if exit_code < 0:
            return f"killed by signal {-exit_code}"
        last = lines[-1].strip() if lines else ""
        return (last or f"tipbench run exited with code {exit_code}")[:MAX_ERROR_CHARS]


def progress_after(progress: Progress, line: str) -> Progress:
    """The progress once `line` of the log has been written."""
    if step := _STEP.match(line):
        done, total = int(step.group(1)), int(step.group(2))
        if step.group(3) or progress.phase == "judge":  # a candidate: `cell cN`
            return replace(progress, phase="judge", judged=done, judge_total=total)
        return replace(progress, phase="collect", cells_done=done, cells_total=total)
    if resuming := _RESUMING.match(line):
        done, total = int(resuming.group(1)), int(resuming.group(2))
        if resuming.group(3) == "candidates":
            return replace(progress, phase="judge", judged=done, judge_total=total)
        return replace(progress, phase="collect", cells_done=done, cells_total=total)
    if line.startswith("downloading the candidates"):
        return replace(progress, phase="judge")
    if line.startswith("== "):
        return replace(progress, phase="report")
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
