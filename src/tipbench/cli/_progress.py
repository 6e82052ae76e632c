"""Progress for long jobs (a grid, a judging pass): a live bar on a terminal, lines in logs,
and progress events for programs when `TIPBENCH_PROGRESS_EVENTS` names a file."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tipbench._progress_events import ProgressEvents, StepCounter, Unit
from tipbench.collect import CellOutcome


class _BarProgress:
    """A bar on stderr (a terminal) or plain lines (logs); use as a context manager.

    The bar shows the count, the time spent and the time left, and names what is being
    done now (`start`, or a `note` such as "loading MODEL"), never what just finished. It
    appears with the first progress it gets; as a terminal shows one live bar at a time, a
    bar that appears (the next phase of a pipeline) ends the one before it. In a log each
    finished step's line says the same: the phase's time so far and about how much is left
    (at the pace of the steps done in this run), so that a long phase does not look hung.

    Each count and finished step is also a progress event (see `tipbench._progress_events`)
    when `events` (by default, the environment) names where they go.
    """

    _shown: _BarProgress | None = None  # the bar on screen now
    clock = staticmethod(time.monotonic)

    title = ""  # shown before the bar
    unit: Unit  # what the bar counts
    done_word = "done"  # "resuming: 3 of 8 <unit> already <done_word>"

    def __init__(self, events: ProgressEvents | None = None) -> None:
        self.console = Console(stderr=True)
        self.live = sys.stderr.isatty()
        self.steps = StepCounter(self.unit, events or ProgressEvents.from_environment())
        self._bar = Progress(
            TextColumn(f"[bold]{self.title}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("left"),
            TextColumn("{task.description}"),
            console=self.console,
            disable=not self.live,
        )
        self._task = self._bar.add_task("", total=None)
        self._began = (self.clock(), 0)  # when this run's steps began, and how many were done

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._hide()

    def _show(self) -> None:
        if _BarProgress._shown is not self:
            if _BarProgress._shown is not None:
                _BarProgress._shown._hide()
            _BarProgress._shown = self
            self._bar.start()

    def _hide(self) -> None:
        if _BarProgress._shown is self:
            self._bar.stop()
            _BarProgress._shown = None

    def begin(self, total: int, done: int) -> None:
        self._show()
        self.steps.begin(total, done)
        # reset, not update: work done before this run must not count in the speed, or
        # the time left would be far too short on a resumed run
        self._bar.reset(self._task, total=total, completed=done, description="")
        self._began = (self.clock(), done)
        if done:
            self._line(f"resuming: {done} of {total} {self.unit} already {self.done_word}")

    def start(self, label: str) -> None:
        """`label` is being worked on now: the bar names it (no line in logs)."""
        self._show()
        self._bar.update(self._task, description=label)

    def _step(self, label: str, error: str | None, suffix: str = "", count: int = 1) -> None:
        step = self.steps.step(label, error, count)
        status = "ok" if error is None else f"FAILED: {error}"
        description = self._bar.tasks[0].description
        # `label` just finished: the bar stops naming it until the next one starts
        self._bar.update(
            self._task, advance=count, description="" if description == label else description
        )
        if not self.live or error is not None:
            timing = "" if self.live else self._timing(step.done, step.total)
            self._line(f"[{step.done}/{step.total}] {label} {status}{suffix}{timing}")

    def _timing(self, done: int, total: int) -> str:
        """`  (0:42 so far, about 1:10 left)`: the phase's time, and the rest at its pace."""
        began, before = self._began
        spent = self.clock() - began
        if done >= total or done <= before:
            return f"  ({_clock(spent)} so far)"
        left = spent / (done - before) * (total - done)
        return f"  ({_clock(spent)} so far, about {_clock(left)} left)"

    def loading(self, model: str, loading: bool) -> None:
        """The phase's model is loading, or ready: an event (the load's own note names it)."""
        self.steps.loading(model, loading)

    def note(self, message: str) -> None:
        self._show()
        self._bar.update(self._task, description=message)
        if not self.live:
            self._line(message)

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)


def _clock(seconds: float) -> str:
    """`1:05`, or `1:02:05` past an hour."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


class CellProgress(_BarProgress):
    """A `CollectProgress`: one step per cell."""

    title, unit, done_word = "collect", "cells", "recorded"

    def advance(self, outcome: CellOutcome) -> None:
        self._step(outcome.cell.name, outcome.error, " (cached)" if outcome.cached else "")


class JudgeProgress(_BarProgress):
    """An `AutoJudgeProgress`: one step per candidate."""

    title, unit, done_word = "judge", "candidates", "judged"

    def advance(self, label: str, error: str | None = None, count: int = 1) -> None:
        self._step(label, error, count=count)
