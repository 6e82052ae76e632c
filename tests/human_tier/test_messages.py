"""What `judge export` and `judge apply` say, as a user reads it: counts in English, runs
nobody scored not called drafts, partly scored candidates not called scored, and a broken
file's syntax error saying what was expected where."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.cells import record_cells
from support.cli import assert_one_line_error, tipbench
from tipbench.tracking import Scores, TrackingStore, record_scores


def judge(uri: str, experiment: str, *args: str) -> subprocess.CompletedProcess[str]:
    return tipbench("judge", *args, "--experiment", experiment, "--tracking-uri", uri)


def score(candidate: dict[str, Any], relevance: int = 4) -> None:
    candidate["scores"].update(relevance=relevance, actionability=3, tone=5)


def test_apply_names_partly_scored_runs_and_counts_the_untouched_ones(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=3)
    out = tmp_path / "judge.json"
    assert judge(sqlite_uri, experiment, "export", "--out", str(out)).returncode == 0
    data = json.loads(out.read_text())
    complete, partial, _untouched = data["items"]
    for candidate in complete["candidates"]:
        score(candidate)
    partial["candidates"][0]["scores"]["tone"] = 4  # one criterion of one candidate
    out.write_text(json.dumps(data, indent=2))

    applied = judge(sqlite_uri, experiment, "apply", str(out))

    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == (
        "applied 1 run, 0 unchanged, 1 not completely scored yet, 1 not scored yet\n"
        f"  not complete yet: items[1] (run {partial['run_id']}): 0 of 2 candidates scored, "
        "1 partly (kept as a draft; the run stays pending)\n"
    )


def test_export_does_not_count_a_candidate_with_a_blank_criterion_as_scored(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=1)
    out = tmp_path / "judge.json"
    first = judge(sqlite_uri, experiment, "export", "--out", str(out))
    exported, order, fill_in = first.stdout.splitlines()
    assert exported == f"exported 1 run (2 candidates) to {out}"
    assert order.startswith("in the experiment's active order since ")  # the judging order
    assert (
        fill_in == f"fill in the scores, then: tipbench judge apply --experiment {experiment} {out}"
    )
    data = json.loads(out.read_text())
    done, half = data["items"][0]["candidates"]
    score(done)
    half["scores"].update(relevance=2, tone=4)  # actionability left blank
    out.write_text(json.dumps(data, indent=2))

    again = judge(sqlite_uri, experiment, "export", "--out", str(out))

    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        f"exported 1 run (2 candidates, 1 already scored, 1 partly, 2 of them carried over "
        f"from the file) to {out}\n"
    )


def test_a_blank_recheck_file_is_not_scored_yet_rather_than_unchanged(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment)
    client = TrackingStore(sqlite_uri).client
    for run_id in run_ids:
        record_scores(
            client, run_id, "human", {c: Scores(5, 3, 4, 1, 0) for c in ("c1", "c2")}, "alice", 0
        )
        record_scores(client, run_id, "auto", {c: Scores(1, 3, 4, 1, 0) for c in ("c1", "c2")},
                      "llamacpp:smollm2-135m", 0)  # fmt: skip
    out = tmp_path / "recheck.json"
    queued = judge(sqlite_uri, experiment, "disagreements", "--out", str(out))
    assert queued.stdout == f"4 candidates in 2 runs differ by more than 1: wrote {out}\n"

    applied = judge(sqlite_uri, experiment, "apply", str(out))  # nothing re-scored yet

    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == (
        "applied 0 runs, 0 unchanged, 0 not completely scored yet, 2 not scored yet\n"
    )


def test_a_missing_comma_is_reported_where_it_belongs_with_what_was_expected(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    record_cells(sqlite_uri, experiment, n_scenarios=1)
    out = tmp_path / "judge.json"
    judge(sqlite_uri, experiment, "export", "--out", str(out))
    lines = out.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith('"tone"'))
    lines[at] = lines[at].replace("null,", "3")  # the comma after the tone forgotten
    out.write_text("\n".join(lines))

    broken = judge(sqlite_uri, experiment, "apply", str(out))

    assert_one_line_error(
        broken,
        f"{out}: not valid JSON at line {at + 1} column {len(lines[at]) + 1}: missing comma "
        "after the value (expected , or })",
    )
