"""A JSON-lines decision log read one line at a time: what `policy evaluate --log` reads.

`read_log(path)` holds one line at a time, never the file: a bad line is reported with its
line number as soon as it is reached, after reading only the lines before it. Iterated, it
gives the rows; `numbered()` gives each with its line number (blank lines are skipped and
counted), which is how `traffic_chunks` names a row of a file in a message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tipbench._errors import ConfigError


def _json_loads() -> Callable[[bytes], Any]:
    """orjson's parser where installed (the `policy` extra: a million rows parse in half the
    time), else the standard library's; both give the same values."""
    try:
        import orjson
    except ImportError:
        return json.loads
    loads: Callable[[bytes], Any] = orjson.loads
    return loads


class LogFile:
    """The rows of a JSON-lines decision log (opened when iterated)."""

    unit = "line"

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for _, row in self.numbered():
            yield row

    def numbered(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, row) of every non-blank line.

        Raises:
            ConfigError: the file cannot be opened, or a line is not a JSON object (naming
                the line).
        """
        loads = _json_loads()
        try:
            file = self.path.open("rb")
        except OSError as exc:
            raise ConfigError(f"--log {self.path}: {exc.strerror or exc}") from None
        with file:
            for number, line in enumerate(file, start=1):
                if not line.strip():
                    continue
                try:
                    row = loads(line)
                except ValueError as exc:  # json's and orjson's JSONDecodeError
                    reason = getattr(exc, "msg", None) or str(exc).split(":")[0]
                    raise ConfigError(
                        f"{self.path}: line {number:,}: not JSON ({reason})"
                    ) from None
                if not isinstance(row, dict):
                    raise ConfigError(f"{self.path}: line {number:,}: not a decision-log row")
                yield number, row


def read_log(path: Path) -> LogFile:
    """The rows of a JSON-lines decision log, read as they are iterated.

    Raises (when iterated):
        ConfigError: the file is missing or a line is not JSON (naming the line).
    """
    return LogFile(path)
