"""The `tipbench` command's exit: its status, its output, its exit handlers and its threads kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A command run as the console script runs it, with an exit handler registered before it
# and, optionally, a thread still writing when the command ends.
_PROGRAM = """
import atexit, sys, threading, time
atexit.register(lambda: print("exit handler ran", flush=True))
if "--late-thread" in sys.argv:
    sys.argv.remove("--late-thread")
    def late():
        time.sleep(0.5)
        print("late thread done", flush=True)
    threading.Thread(target=late).start()
from tipbench.cli import run
sys.argv = ["tipbench", *sys.argv[1:]]
run()
"""


def _tipbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROGRAM, *args], capture_output=True, text=True, timeout=120
    )


def test_a_command_that_succeeds_exits_0_with_its_output_and_exit_handlers() -> None:
    result = _tipbench("--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: tipbench" in result.stdout
    assert result.stdout.splitlines()[-1] == "exit handler ran"


def test_a_command_that_fails_keeps_its_status_and_its_one_line(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = _tipbench("compare", "--experiment", "nope", "--tracking-uri", uri)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: no experiment 'nope' at {uri}"
    assert "exit handler ran" in result.stdout


def test_the_exit_waits_for_a_thread_still_running() -> None:
    result = _tipbench("--late-thread", "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["late thread done", "exit handler ran"]
