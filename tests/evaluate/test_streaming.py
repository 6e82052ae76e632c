"""A log is read once, a chunk at a time: the figures are those of the whole log read at once,
memory does not grow with its length but for 16 bytes a decision id, and a decision counted
twice is refused naming the id and both rows (a log exported twice narrowed every interval
by √2)."""

from __future__ import annotations

import json
import math
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import assert_one_line_error, tipbench
from support.policy_logs import HAND_MADE, row
from tipbench.evaluate import (
    LogRowError,
    evaluate,
    read_log,
    traffic_chunks,
    traffic_from_rows,
)
from tipbench.simulate import Contender, make_world, serve
from tipbench.simulate._log import log_rows
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore


def test_a_decision_logged_twice_is_refused_naming_both_rows() -> None:
    again = dict(HAND_MADE[0])
    with pytest.raises(LogRowError) as raised:
        traffic_from_rows([*HAND_MADE, again])
    assert str(raised.value) == (
        "decision 'h1' is logged twice (rows 1 and 6): a decision counted twice narrows "
        "every interval; export the log once"
    )
    conflicting = {**HAND_MADE[1], "reward": 1.0}  # h2 was rewarded 0
    with pytest.raises(LogRowError, match=r"^decision 'h2' is logged twice with conflicting "
                       r"rewards \(rows 2 and 6: 0 and 1\)$"):  # fmt: skip
        traffic_from_rows([*HAND_MADE, conflicting])
    unrewarded = dict(HAND_MADE[4])  # never rewarded, logged twice all the same
    with pytest.raises(LogRowError, match=r"^decision 'h8' is logged twice \(rows 5 and 6\)"):
        traffic_from_rows([*HAND_MADE, unrewarded])


def test_a_repeat_is_found_in_a_later_chunk_and_within_one() -> None:
    rows = [row((0.5, 0.5), i % 2, 1.0, (0.5, 0.5), f"c{i}") for i in range(20)]
    later = [*rows, {**rows[3]}]
    with pytest.raises(LogRowError, match=r"'c3' is logged twice \(rows 4 and 21\)"):
        list(traffic_chunks(later, size=2))
    within = [*rows[:5], {**rows[4]}, *rows[5:]]
    with pytest.raises(LogRowError, match=r"'c4' is logged twice \(rows 5 and 6\)"):
        list(traffic_chunks(within, size=8))
    first = [*rows, {**rows[7]}, {**rows[2]}]  # the first repeat in log order is named
    with pytest.raises(LogRowError, match=r"'c7' is logged twice \(rows 8 and 21\)"):
        list(traffic_chunks(first, size=100))


def test_a_log_exported_twice_is_refused_and_nothing_recorded(
    tmp_path: Path, sqlite_uri: str
) -> None:
    path = tmp_path / "twice.jsonl"
    once = "".join(json.dumps(r) + "\n" for r in HAND_MADE)
    path.write_text(once + once)
    refused = tipbench("policy", "evaluate", "--log", str(path), "--tracking-uri", sqlite_uri)
    assert_one_line_error(refused, "decision 'h1' is logged twice (lines 1 and 6)")
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists() or not [
        run
        for experiment in TrackingStore(sqlite_uri).client.search_experiments()
        for run in TrackingStore(sqlite_uri).client.search_runs([experiment.experiment_id])
    ]


def _close(a: Any, b: Any) -> bool:
    """Two JSON documents equal, their floats to 1e-9 (sums in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def test_chunks_give_the_figures_of_the_whole_log() -> None:
    """A simulated world's log (egreedy-v1 live, egreedy-v2 and linucb shadows), read in
    chunks of 97 rewarded decisions or whole: the same report, a policy replayed across the
    chunks included."""
    suite = load_suite()
    assert suite.population is not None and suite.catalogue is not None
    world = make_world(suite.population, suite.catalogue, 3, 30, 14)
    shadows = [Contender.named("egreedy-v2"), Contender.named("linucb")]
    categories = len(suite.population.categories)
    served = serve([world], Contender.named("egreedy-v1"), shadows, categories)
    rows = list(log_rows(world, served, 0, suite.catalogue))
    whole = evaluate(traffic_from_rows(rows)).to_dict()
    chunked = evaluate(traffic_chunks(rows, size=97)).to_dict()
    assert chunked["policies"][0]["status"] == "estimated"
    assert _close(chunked, whole), (chunked, whole)
    without = [{**r, "shadows": [s for s in r["shadows"] if s["policy"] != "linucb"]} for r in rows]
    replayed = evaluate(traffic_chunks(without, size=97), ["linucb"]).to_dict()
    assert replayed["policies"][0]["source"] == "replayed"
    assert _close(
        replayed["policies"], evaluate(traffic_from_rows(without), ["linucb"]).to_dict()["policies"]
    )
    logged = evaluate(traffic_from_rows(rows), ["linucb"]).to_dict()["policies"][0]
    assert replayed["policies"][0]["estimates"]["dr"]["value"] == pytest.approx(
        logged["estimates"]["dr"]["value"], abs=1e-9
    )  # the replay logs what the shadow did


def decisions(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield row((0.5, 0.5), i % 2, float(i % 3 == 0), (0.8, 0.2), f"m{i}")


def peak_bytes(n: int) -> int:
    tracemalloc.start()
    try:
        report = evaluate(traffic_chunks(decisions(n)), ["egreedy-v2"])
        assert report.rewarded == n and report.policy("egreedy-v2").status == "estimated"
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_log() -> None:
    """5,000 and 25,000 decisions (chunks of 4,096): the peak grows by less than 32 bytes a
    decision (the ids' 16, in sorted runs; about 21 here), where the arrays of the whole log
    took about 2 KB."""
    peak_bytes(1_000)  # what the first evaluation imports is not the log's
    small, large = peak_bytes(5_000), peak_bytes(25_000)
    assert (large - small) / 20_000 < 32, (small, large)


def test_a_bad_last_line_is_named_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for r in decisions(5_000):
            out.write(json.dumps(r) + "\n")
        out.write("\n")  # a blank line is skipped, and counted
        out.write('{"decision_id": "last"\n')
    with pytest.raises(Exception, match=r"log\.jsonl: line 5,002: not JSON"):
        evaluate(traffic_chunks(read_log(path)))
