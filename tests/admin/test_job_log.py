"""Following a job: its progress from the events `tipbench run` writes, never from its log
(no subprocess, no model)."""

from __future__ import annotations

from pathlib import Path

from tipbench._progress_events import (
    ErrorReported,
    Finished,
    ModelLoading,
    PhaseStarted,
    ProgressEvent,
    ProgressEvents,
    StepDone,
    TotalKnown,
)
from tipbench.admin._job_log import JobFollower, progress_after, read_log
from tipbench.admin._jobs import Progress

M = "llamacpp:smollm2-135m"
# What `tipbench run` writes as events on a resumed 1-prompt grid of 3 scenarios.
RESUMED_RUN: list[ProgressEvent] = [
    PhaseStarted(phase="collect"),
    TotalKnown(unit="cells", total=3, done=1),
    StepDone(unit="cells", done=2, total=3, item=f"{M}|v1|student-evening"),
    StepDone(unit="cells", done=3, total=3, item=f"{M}|v1|engineer-morning"),
    PhaseStarted(phase="judge"),
    TotalKnown(unit="candidates", total=6, done=2),
    StepDone(unit="candidates", done=3, total=6, item=f"{M}|v1|student-evening c1"),
    StepDone(
        unit="candidates",
        done=4,
        total=6,
        item=f"{M}|v1|student-evening c2",
        error="unparsable answer",
    ),
    StepDone(unit="candidates", done=6, total=6, item=f"{M}|v1|engineer-morning c1"),
    PhaseStarted(phase="export"),
    PhaseStarted(phase="compare"),
    PhaseStarted(phase="report"),
    Finished(exit_code=1),
]
# What it writes to its log meanwhile, reworded: progress must not depend on these words.
REWORDED_LOG = """\
picking up where we left: 1/3 cells done
[2/3] llamacpp:smollm2-135m|v1|student-evening ok
cell 3 of 3 finished: llamacpp:smollm2-135m|v1|engineer-morning
resuming: 2 of 6 candidates already judged
== collect
"""


def emit(path: Path, *events: ProgressEvent) -> None:
    writer = ProgressEvents.to_file(path)
    for event in events:
        writer.emit(event)


def test_progress_follows_the_events_of_a_resumed_run() -> None:
    progress = Progress(cells_total=3)
    seen = []
    for event in RESUMED_RUN:
        progress = progress_after(progress, event)
        seen.append(progress)

    assert seen[0] == Progress("collect", 0, 3)
    assert seen[1] == Progress("collect", 1, 3)
    assert seen[3] == Progress("collect", 3, 3)
    assert seen[5] == Progress("judge", 3, 3, 2, 6)  # resumed: two candidates judged before
    assert seen[8] == Progress("judge", 3, 3, 6, 6)  # a failed cell's last candidates at once
    assert [p.phase for p in seen[9:12]] == ["export", "compare", "report"]
    assert seen[-1] == seen[-2]


def test_the_follower_reads_this_attempts_whole_events(tmp_path: Path) -> None:
    log, events = tmp_path / "job.log", tmp_path / "job.events.jsonl"
    log.write_text("--- attempt 1\nerror: the first attempt's\n")
    emit(events, PhaseStarted(phase="collect"), ErrorReported(message="error: the first's"))
    follower = JobFollower(log, events, Progress(cells_total=2))  # attempt 2 starts
    line = StepDone(unit="cells", done=1, total=2, item="m|v1|student-morning")

    emit(events, PhaseStarted(phase="collect"))
    with events.open("a") as out:
        out.write('{"v":2,"event":"phase","phase":"new"}\n')  # another format: refused
        out.write('{"v":1,"event":"step","unit":"cells","done":1,"total":2,')
        out.flush()
        assert follower.poll() and follower.progress == Progress("collect", 0, 2)
        out.write('"item":"m|v1|student-morning","error":null}\n')
    assert follower.poll() and follower.progress == Progress("collect", 1, 2)
    assert progress_after(Progress("collect", 0, 2), line) == follower.progress
    assert follower.error is None  # the first attempt's error is not this one's

    emit(events, ErrorReported(message="interrupted: re-run the same command to resume"))
    assert follower.error_line(130) == "interrupted: re-run the same command to resume"


def test_rewording_the_log_changes_no_progress(tmp_path: Path) -> None:
    log, events = tmp_path / "job.log", tmp_path / "job.events.jsonl"
    follower = JobFollower(log, events, Progress(cells_total=3))
    log.write_text(REWORDED_LOG)

    assert not follower.poll() and follower.progress == Progress(cells_total=3)
    emit(events, *RESUMED_RUN[:4])
    assert follower.poll() and follower.progress == Progress("collect", 3, 3)
    with log.open("a") as out:
        out.write("[9/9] something else entirely ok\n== leaderboard\n")
    assert not follower.poll() and follower.progress == Progress("collect", 3, 3)


def test_the_error_line_is_the_error_event_else_a_failed_step_else_the_signal_or_log(
    tmp_path: Path,
) -> None:
    log, events = tmp_path / "job.log", tmp_path / "job.events.jsonl"
    follower = JobFollower(log, events, Progress())
    emit(events, *RESUMED_RUN)
    log.write_text("1 cells: 0 already recorded, 0 collected, 1 failed\nmodel loads: none")
    assert follower.error_line(1) == f"failed: {M}|v1|student-evening c2: unparsable answer"

    crashed = JobFollower(log, tmp_path / "none.events.jsonl", Progress())
    with log.open("a") as out:  # a crash says nothing as an event: its traceback's last line
        out.write("\nTraceback (most recent call last):\n  ...\nRuntimeError: boom\n")
    assert crashed.error_line(1) == "RuntimeError: boom"
    killed = JobFollower(log, tmp_path / "none.events.jsonl", Progress())
    assert killed.error_line(-9) == "killed by signal 9"
    silent = JobFollower(tmp_path / "none.log", tmp_path / "none.events.jsonl", Progress())
    assert silent.error_line(3) == "tipbench run exited with code 3"


def test_read_log(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    assert read_log(log) == ""
    log.write_text("a\nb\nc")
    assert read_log(log) == "a\nb\nc"
    assert read_log(log, tail=2) == "b\nc"
    assert read_log(log, tail=10) == "a\nb\nc"


def test_the_judge_is_loading_from_its_loading_event_until_it_is_ready() -> None:
    """Issue 34: the job card says "loading the judge model" while it does, not "0 of 6
    candidates judged"; a collect model's loading is not the judge's."""
    progress = Progress("judge", 9, 9)
    events = [
        TotalKnown(unit="candidates", total=6, done=0),
        ModelLoading(unit="candidates", model="llamacpp:smollm2-135m", loading=True),
    ]
    for event in events:
        progress = progress_after(progress, event)
    assert (progress.judge_loading, progress.judged, progress.judge_total) == (
        "llamacpp:smollm2-135m", 0, 6,
    )  # fmt: skip
    ready = ModelLoading(unit="candidates", model="llamacpp:smollm2-135m", loading=False)
    progress = progress_after(progress, ready)
    assert progress.judge_loading is None
    collect = ModelLoading(unit="cells", model="llamacpp:smollm2-135m", loading=True)
    assert progress_after(progress, collect).judge_loading is None
