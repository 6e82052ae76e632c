"""The progress-event format: what a writer appends, a reader reads back or refuses."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from tipbench._progress_events import (
    ErrorReported,
    Finished,
    ModelLoading,
    PhaseStarted,
    ProgressEvent,
    ProgressEventError,
    ProgressEvents,
    StepCounter,
    StepDone,
    TotalKnown,
    read_event,
)

EVERY_KIND: list[ProgressEvent] = [
    PhaseStarted(phase="judge"),
    TotalKnown(unit="candidates", total=12, done=4),
    StepDone(unit="candidates", done=5, total=12, item="m|v1|student-morning c1"),
    StepDone(unit="cells", done=1, total=3, item="m|v1|s", error="out of memory: ünïcode"),
    ModelLoading(unit="candidates", model="llamacpp:smollm2-135m", loading=True),
    ErrorReported(message="error: ollama:x: cannot reach Ollama at http://h:9"),
    Finished(exit_code=130),
]


def test_a_file_gets_one_private_line_per_event_that_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "run.events.jsonl"
    events = ProgressEvents.to_file(path)
    for event in EVERY_KIND:
        events.emit(event)

    lines = path.read_text().splitlines()
    assert [read_event(line) for line in lines] == EVERY_KIND
    assert lines[0] == '{"v":1,"event":"phase","phase":"judge"}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"v":2,"event":"phase","phase":"collect"}', "format v2"),
        ('{"event":"phase","phase":"collect"}', "format vNone"),
        ('{"v":1,"event":"progress","done":3}', "does not match any of the expected tags"),
        ('{"v":1,"event":"total","unit":"runs","total":3,"done":0}', "'cells', 'candidates' or"),
        ("[1/3] m|v1|s ok", "not a progress event"),
    ],
)
def test_a_reader_refuses_what_is_not_an_event_of_its_version(line: str, message: str) -> None:
    with pytest.raises(ProgressEventError, match=message):
        read_event(line)


def test_a_step_counter_counts_from_what_was_done_before() -> None:
    lines: list[str] = []
    steps = StepCounter("cells", ProgressEvents(lines.append))
    steps.begin(3, 1)
    steps.step("a")
    last = steps.step("b", "boom")

    assert last == StepDone(unit="cells", done=3, total=3, item="b", error="boom")
    assert [read_event(line) for line in lines] == [
        TotalKnown(unit="cells", total=3, done=1),
        StepDone(unit="cells", done=2, total=3, item="a"),
        last,
    ]


def test_writing_is_best_effort_and_nowhere_without_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ProgressEvents.to_file(tmp_path / "missing" / "x.jsonl").emit(Finished(exit_code=0))
    monkeypatch.delenv("TIPBENCH_PROGRESS_EVENTS", raising=False)
    ProgressEvents.from_environment().emit(Finished(exit_code=0))
    monkeypatch.setenv("TIPBENCH_PROGRESS_EVENTS", str(tmp_path / "env.jsonl"))
    ProgressEvents.from_environment().emit(Finished(exit_code=0))
    assert read_event((tmp_path / "env.jsonl").read_text()) == Finished(exit_code=0)

    with caplog.at_level(logging.INFO, logger="tipbench.test"):
        ProgressEvents.to_logger(logging.getLogger("tipbench.test")).emit(EVERY_KIND[0])
    assert [read_event(record.getMessage()) for record in caplog.records] == EVERY_KIND[:1]
