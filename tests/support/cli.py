"""Running the `tipbench` command as a user does, and what a user sees when input is bad."""

from __future__ import annotations

import subprocess
import sys


def tipbench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`tipbench ARGS…` in a subprocess (this interpreter, so this checkout's code)."""
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], *expected: str, exit_code: int = 2
) -> str:
    """The command failed with `exit_code` and one `error: …` line holding each of `expected`
    (no traceback); return that line."""
    assert result.returncode == exit_code, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in errors[0], errors[0]
    return errors[0]
