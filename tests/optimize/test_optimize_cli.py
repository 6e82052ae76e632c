"""`tipbench optimize` as a user runs it: what it prints, and one-line errors for bad input
with nothing written (no suite copy, no store, no state, no version file).

The models are the scripted world's on the fake Ollama server (`support.scripted_world`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cells import record_cells
from support.cli import assert_one_line_error, tipbench
from support.ollama_server import FakeOllama
from support.scripted_world import (
    MORNING,
    REFLECTION,
    TOO_LARGE,
    optimize_args,
    reflection,
    said,
)
from tipbench.suite import content_hash, load_suite
from tipbench.tracking import TrackingStore

V1 = load_suite().prompt("v1")
P1 = f"v1-gepa-{content_hash([said(V1, 'system', MORNING), V1.user])[:8]}"


def test_prints_the_split_lineage_skipped_proposal_and_shortlist(
    world: FakeOllama, sqlite_uri: str, tipbench_home: Path
) -> None:
    """Two iterations: v1's system template gains "say when" (accepted), then a user
    template without `$tasks` is skipped, counted and shown."""
    world.script(
        REFLECTION,
        [
            reflection(said(V1, "system", MORNING)),
            reflection(V1.user.replace("$tasks", "the tasks"), "Shorter."),
        ],
    )
    done = tipbench(*optimize_args(world, sqlite_uri, "--budget", "14", "--no-heldout"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "training on 2 scenarios (student-morning, student-evening), holding out 6" in out
    assert "10 evaluations, 2 iterations, 1 proposal, 1 skipped proposal" in out
    assert "10 of 14 evaluations spent (an iteration can spend 6: the 4 left" in out
    assert f"\n    {P1}  " in out and "pool, best on student-morning" in out
    assert "[shortlist]" in out
    assert (
        f"iteration 2: skipped a new user template for {P1}: it drops the placeholder $tasks"
        in (out)
    )
    assert "skipped a proposal: it drops the placeholder $tasks" in done.stderr
    assert f"\n      +{said(V1, 'system', MORNING)}\n" in out  # a diff from its parent
    assert "skipped proposals by reason: 1 placeholder problem" in out
    assert f"{P1}: " in out.split("== shortlist")[1]
    written = tipbench_home / "suites" / "tips" / "prompts" / f"{P1}.yaml"
    assert written.is_file() and "parent: v1" in written.read_text()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--from", "v9"], "unknown prompt version 'v9'"),
        (["--budget", "7"], "--budget 7 is below one iteration: 8 evaluations"),
        (["--train-scenarios", "8"], "no held-out scenarios left"),
        (["--train-scenarios", "student-noon"], "unknown scenario 'student-noon'"),
        (["--reflection-model", f"ollama:{TOO_LARGE}"], "8.0"),
        (["--budget", "0"], "--budget"),
        (["--suite", "/nonexistent/suite"], "not a suite folder"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    world: FakeOllama, sqlite_uri: str, tipbench_home: Path, extra: list[str], expected: str
) -> None:
    result = tipbench(*optimize_args(world, sqlite_uri, *extra))
    assert_one_line_error(result, expected)
    assert not (tipbench_home / "suites").exists()
    assert not (tipbench_home / "optimize").exists()
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()
    assert [e for e in world.events if e[0] == "chat"] == []  # nothing generated


def test_the_heldout_experiment_must_hold_heldout_scenarios_only(
    world: FakeOllama, sqlite_uri: str, tipbench_home: Path
) -> None:
    """The gate counts every scenario of its experiment: the training experiment itself, or
    one holding a cell of a training scenario (another split's held-out grid, say), is
    refused in one line before anything is written (issue 45, item 3)."""
    same = tipbench(*optimize_args(world, sqlite_uri, "--heldout-experiment", "tip-bench-optimize"))
    assert_one_line_error(same, "--heldout-experiment: the held-out grid needs an experiment")
    record_cells(sqlite_uri, "tip-bench-optimize-heldout", n_scenarios=2)  # the student's two
    mixed = tipbench(*optimize_args(world, sqlite_uri))
    assert_one_line_error(
        mixed,
        "--heldout-experiment tip-bench-optimize-heldout holds cells of training scenarios "
        "(student-evening, student-morning)",
    )
    assert not (tipbench_home / "suites").exists()
    assert not (tipbench_home / "optimize").exists()
    assert TrackingStore(sqlite_uri).find_experiment("tip-bench-optimize") is None
    assert [e for e in world.events if e[0] == "chat"] == []
