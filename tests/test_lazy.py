"""The policy side's public faces load what only some commands need on first use: importing
them does not pull in the web stack (uvicorn, FastAPI), httpx or (for `evaluate`) the tracking
store before a name that needs it is asked for, so that `tipbench policy` commands that do not
serve, reach a server or record do not pay for them at start.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("uvicorn", "fastapi", "httpx", "tipbench.tracking")


def loaded_after(statement: str) -> set[str]:
    """The HEAVY modules a fresh interpreter holds after `statement`."""
    held = f"[m for m in {HEAVY!r} if m in sys.modules]"
    code = f"import sys, json; {statement}; print(json.dumps({held}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


@pytest.mark.parametrize(
    ("package", "without"),
    [
        ("evaluate", {"tipbench.tracking", "httpx"}),
        ("policy_service", {"uvicorn", "fastapi", "httpx"}),
        ("simulate", {"httpx"}),
    ],
)
def test_the_faces_import_without_their_heavy_parts(package: str, without: set[str]) -> None:
    assert loaded_after(f"import tipbench.{package}") & without == set()


@pytest.mark.parametrize(
    ("statement", "loads"),
    [
        ("from tipbench.policy_service import serve", "uvicorn"),
        ("from tipbench.simulate import simulate_remote", "httpx"),
        ("from tipbench.evaluate import log_evaluation", "tipbench.tracking"),
    ],
)
def test_a_lazy_name_loads_its_part_when_asked_for(statement: str, loads: str) -> None:
    assert loads in loaded_after(statement)


def test_an_unknown_name_is_an_import_error() -> None:
    with pytest.raises(ImportError, match="cannot import name 'simulate_nothing'"):
        from tipbench.simulate import simulate_nothing  # type: ignore[attr-defined]  # noqa: F401
