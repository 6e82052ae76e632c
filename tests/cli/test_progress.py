"""The progress bars name what is running now and show the time left."""

from __future__ import annotations

import io

from rich.console import Console

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
