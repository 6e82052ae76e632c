"""Progress for long grids: a live bar on a terminal, plain lines in logs."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tipbench.collect import CellOutcome


class CellProgress:
    """A `CollectProgress` that draws on stderr; use as a context manager."""

    def __init__(self) -> None:
        self.console = Console(stderr=True)
        self.live = sys.stderr.isatty()
        self.done = 0
        self.total = 0
        self._bar = Progress(
            TextColumn("[bold]collect"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=self.console,
            disable=not self.live,
        )
        self._task = self._bar.add_task("", total=None)

    def __enter__(self) -> CellProgress:
        self._bar.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bar.stop()

    def begin(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self._bar.update(self._task, total=total, completed=done)
        if done:
            self._line(f"resuming: {done} of {total} cells already recorded")

    def advance(self, outcome: CellOutcome) -> None:
        self.done += 1
        status = "ok" if outcome.ok else f"FAILED: {outcome.error}"
        cached = " (cached)" if outcome.cached else ""
        self._bar.update(self._task, advance=1, description=outcome.cell.name)
        if not self.live or not outcome.ok:
            self._line(f"[{self.done}/{self.total}] {outcome.cell.name} {status}{cached}")

    def note(self, message: str) -> None:
        self._bar.update(self._task, description=message)
        if not self.live:
            self._line(message)

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)
