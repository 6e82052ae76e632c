"""The jobs database and the reading of a job's log (no subprocess, no model)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tipbench.pipeline import RunRequest
from tipbench.server._job_log import LogFollower, progress_after, read_log
from tipbench.server._jobs import JobConflict, JobNotFound, JobStore, Progress

REQUEST = RunRequest(models=["llamacpp:smollm2-135m"], prompts=["v1", "v2-mentor"], n_scenarios=3)

# What `tipbench run` wrote to a non-terminal stderr on a resumed 1-prompt grid.
TRANSCRIPT = """\
opening the tracking store
resuming: 1 of 3 cells already recorded
loading llamacpp:smollm2-135m
[2/3] llamacpp:smollm2-135m|v1|student-evening ok
[3/3] llamacpp:smollm2-135m|v1|engineer-morning ok (cached)
unloading llamacpp:smollm2-135m
writing the last runs to MLflow
resuming: 2 of 6 candidates already judged
downloading the candidates of 2 runs
loading llamacpp:smollm2-135m
[3/6] llamacpp:smollm2-135m|v1|student-evening c1 ok
[4/6] llamacpp:smollm2-135m|v1|student-evening c2 FAILED: unparsable answer
[6/6] llamacpp:smollm2-135m|v1|engineer-morning
unloading llamacpp:smollm2-135m
"""


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "jobs.sqlite", tmp_path / "jobs")


def test_a_new_job_is_queued_with_its_grid_size(store: JobStore) -> None:
    job = store.create(REQUEST)

    assert job.state == "queued" and job.attempts == 0
    assert job.progress == Progress(cells_total=1 * 2 * 3)
    assert job.log_path == store.log_dir / f"{job.id}.log"
    assert RunRequest.model_validate(job.config) == REQUEST
    assert store.get(job.id) == job
    with pytest.raises(JobNotFound):
        store.get("0" * 32)


def test_the_queue_is_first_in_first_out_and_resumed_jobs_go_last(store: JobStore) -> None:
    first, second = store.create(REQUEST), store.create(REQUEST)
    assert store.next_queued() == first

    assert store.claim(first.id) and not store.claim(first.id)
    assert store.next_queued() == second
    assert store.finish(first.id, "failed", exit_code=2, error="error: boom")
    resumed = store.requeue(first.id)

    assert resumed.state == "queued" and resumed.error == "error: boom"
    assert store.next_queued() == second
    assert [job.id for job in store.jobs()] == [second.id, first.id]  # newest first


def test_only_failed_cancelled_or_interrupted_jobs_resume(store: JobStore) -> None:
    job = store.create(REQUEST)
    with pytest.raises(JobConflict, match="queued"):
        store.requeue(job.id)
    store.claim(job.id)
    store.finish(job.id, "succeeded", exit_code=0, error=None)
    with pytest.raises(JobConflict, match="succeeded"):
        store.requeue(job.id)


def test_claiming_starts_the_progress_over(store: JobStore) -> None:
    job = store.create(REQUEST)
    store.claim(job.id)
    store.set_pid(job.id, 4321)
    store.set_progress(job.id, Progress("judge", 6, 6, 3, 12))
    store.finish(job.id, "cancelled", exit_code=130, error=None)
    store.requeue(job.id)

    assert store.claim(job.id)
    again = store.get(job.id)
    assert again.attempts == 2 and again.pid is None and again.exit_code is None
    assert again.progress == Progress(cells_total=6)


def test_running_jobs_become_interrupted(store: JobStore) -> None:
    running, queued = store.create(REQUEST), store.create(REQUEST)
    store.claim(running.id)
    store.set_pid(running.id, 4321)

    found = store.interrupt_running("the server stopped")

    assert [(job.id, job.pid) for job in found] == [(running.id, 4321)]
    job = store.get(running.id)
    assert job.state == "interrupted" and job.error == "the server stopped" and job.pid is None
    assert store.get(queued.id).state == "queued"


def test_the_database_is_sqlite_in_wal_mode(store: JobStore) -> None:
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_progress_follows_the_phases_of_the_log() -> None:
    progress = Progress(cells_total=3)
    seen = []
    for line in TRANSCRIPT.splitlines():
        progress = progress_after(progress, line)
        seen.append(progress)

    assert seen[1] == Progress("collect", 1, 3)
    assert seen[4] == Progress("collect", 3, 3)
    assert seen[7] == Progress("judge", 3, 3, 2, 6)
    assert seen[-2] == Progress("judge", 3, 3, 6, 6)  # a step whose label the log wrapped
    assert progress_after(progress, "== collect").phase == "report"


def test_the_follower_reads_whole_lines_and_finds_the_error(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("--- attempt 1\n")
    follower = LogFollower(log, Progress(), offset=log.stat().st_size)
    with log.open("a") as out:
        out.write("opening the tracking store\n[1/2] m|v1|student-morning ok\n[2/2] m|v1|st")
        out.flush()
        assert follower.poll()
        assert follower.progress == Progress("collect", 1, 2)
        out.write("udent-evening ok\nerror: ollama:x: cannot reach Ollama at http://h:9\n")
        out.write("interrupted")

    assert follower.poll() and follower.progress.cells_done == 2
    assert follower.error_line(2) == "error: ollama:x: cannot reach Ollama at http://h:9"
    assert "attempt 1" not in follower.recent  # earlier attempts are not this one's error


def test_error_line_without_an_error_message(tmp_path: Path) -> None:
    follower = LogFollower(tmp_path / "job.log", Progress())
    follower.feed("[1/1] m|v1|s FAILED: out of memory")
    follower.feed("1 cells: 0 already recorded, 0 collected, 1 failed")
    assert follower.error_line(1) == "[1/1] m|v1|s FAILED: out of memory"
    assert LogFollower(tmp_path / "none", Progress()).error_line(-9) == "killed by signal 9"


def test_read_log(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    assert read_log(log) == ""
    log.write_text("a\nb\nc")
    assert read_log(log) == "a\nb\nc"
    assert read_log(log, tail=2) == "b\nc"
    assert read_log(log, tail=10) == "a\nb\nc"
