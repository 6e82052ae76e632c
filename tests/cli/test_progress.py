"""The progress bars name what is running now and show the time left; in a log they write
lines for people and, when asked, progress events beside them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from support.cli import assert_one_line_error, tipbench
from tipbench._progress_events import (
    ErrorReported,
    Finished,
    ProgressEvents,
    StepDone,
    TotalKnown,
    read_event,
)
from tipbench.cli._progress import CellProgress, JudgeProgress, _BarProgress


def on_terminal(progress: _BarProgress) -> _BarProgress:
    """The bar as a terminal shows it, drawn into a string instead of stderr."""
    progress.console = Console(file=io.StringIO(), force_terminal=True, width=160)
    progress.live = True
    progress._bar.live.console = progress.console
    progress._bar.disable = False
    return progress


def screen(progress: _BarProgress) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(progress._bar.get_renderable())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def test_judge_bar_names_the_candidate_being_judged_not_the_load() -> None:
    with on_terminal(JudgeProgress()) as bar:
        bar.begin(6, 0)
        bar.note("loading llamacpp:smollm2-135m")
        assert "loading llamacpp:smollm2-135m" in screen(bar)
        bar.start("m|v1|student-morning c1")  # judging starts once the model is loaded
        shown = screen(bar)
        assert "m|v1|student-morning c1" in shown and "loading" not in shown
        assert "0/6" in shown and "left" in shown
        bar.advance("m|v1|student-morning c1")
        assert "student-morning c1" not in screen(bar)  # finished: not named any more
        bar.start("m|v1|student-morning c2")
        assert "m|v1|student-morning c2" in screen(bar) and "1/6" in screen(bar)


def test_collect_bar_names_the_cell_being_generated() -> None:
    with on_terminal(CellProgress()) as bar:
        bar.begin(8, 3)  # resumed: three cells were recorded before
        bar.start("m|v1|engineer-evening")
        shown = screen(bar)
        assert "3/8" in shown and "m|v1|engineer-evening" in shown and "left" in shown


def in_a_log(progress: _BarProgress) -> io.StringIO:
    """The bar piped into a log: its lines go to the returned buffer."""
    out = io.StringIO()
    progress.console = Console(file=out, width=300, color_system=None)
    progress.live = False
    return out


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_in_a_log_the_lines_stay_and_the_events_come_beside_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    clock = Clock()
    monkeypatch.setattr(_BarProgress, "clock", staticmethod(clock))
    with JudgeProgress(ProgressEvents(events.append)) as bar:
        log = in_a_log(bar)
        bar.begin(6, 2)
        bar.note("loading m")
        clock.now += 50  # the load, then the first candidate of this run
        bar.advance("m|v1|s c1")
        clock.now += 3725
        bar.advance("m|v1|s c2", "unparsable answer", count=3)  # and the cell's c3, c4

    assert log.getvalue().splitlines() == [
        "resuming: 2 of 6 candidates already judged",
        "loading m",
        "[3/6] m|v1|s c1 ok  (0:50 so far, about 2:30 left)",  # 3 left at 50 s each
        "[6/6] m|v1|s c2 FAILED: unparsable answer  (1:02:55 so far)",
    ]
    assert [read_event(line) for line in events] == [
        TotalKnown(unit="candidates", total=6, done=2),
        StepDone(unit="candidates", done=3, total=6, item="m|v1|s c1"),
        StepDone(unit="candidates", done=6, total=6, item="m|v1|s c2", error="unparsable answer"),
    ]


def test_a_command_refused_writes_its_error_line_and_exit_code_as_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = tipbench("collect", "--n-tips", "0")
    path = tmp_path / "run.events.jsonl"
    monkeypatch.setenv("TIPBENCH_PROGRESS_EVENTS", str(path))
    told = tipbench("collect", "--n-tips", "0")

    line = assert_one_line_error(told, "Invalid value for '--n-tips': ")
    assert (told.stdout, told.stderr) == (quiet.stdout, quiet.stderr)  # people see the same
    assert [read_event(event) for event in path.read_text().splitlines()] == [
        ErrorReported(message=line),
        Finished(exit_code=2),
    ]
