"""A decision log is checked before anything is estimated: each impossible number is refused
in one line naming the decision and the field, with either JSON reader, and nothing is
recorded in MLflow; an empty log records nothing either; `/score` decisions stay out of a
shadow's estimate unless asked for."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.cli import assert_one_line_error, tipbench
from support.policy_logs import HAND_MADE, row
from tipbench.evaluate import (
    PROBABILITY_TOLERANCE,
    LogRowError,
    evaluate,
    read_log,
    traffic_from_rows,
)
from tipbench.tracking import TrackingStore


def changed(path: str, value: Any) -> dict[str, Any]:
    """The first hand-made row (decision `h1`, focus-25 shown with 0.5) with the field at the
    dotted `path` set to `value`."""
    body = copy.deepcopy(HAND_MADE[0])
    *parents, last = path.split(".")
    node: Any = body
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[int(last) if last.isdigit() else last] = value
    return body


IMPOSSIBLE = {
    "a propensity of 0": (changed("propensity", 0), "propensity: 0 is not in (0, 1]"),
    "a propensity of 1.5": (changed("propensity", 1.5), "propensity: 1.5 is not in (0, 1]"),
    "a propensity of -0.2": (changed("propensity", -0.2), "propensity: -0.2 is not in (0, 1]"),
    "a propensity as a string": (changed("propensity", "0.5"), "propensity: '0.5' is not a number"),
    "a propensity not the shown tip's": (
        changed("propensity", 0.4), "propensity: 0.4 is not the shown tip's probability 0.5"
    ),
    "a candidate probability of 1.5": (
        changed("candidates.1.probability", 1.5),
        "candidates[1].probability: 1.5 is not a probability in [0, 1]",
    ),
    "a candidate probability as a string": (
        changed("candidates.0.probability", "0.5"),
        "candidates[0].probability: '0.5' is not a number",
    ),
    "probabilities summing to 0.5": (
        changed("candidates.1.probability", 0.0),
        f"candidates: the probabilities sum to 0.5, not 1 (±{PROBABILITY_TOLERANCE:g})",
    ),
    "probabilities summing to 3": (
        changed("candidates", [{"tip_id": t, "category": "focus", "probability": 1.0}
                               for t in ("focus-25", "break-walk", "plan-10")]),
        "candidates: the probabilities sum to 3, not 1",
    ),
    "a shown tip of probability 0": (
        {**HAND_MADE[0], "candidates": [
            {**HAND_MADE[0]["candidates"][0], "probability": 0.0},
            {**HAND_MADE[0]["candidates"][1], "probability": 1.0}]},
        "candidates: the shown tip 'focus-25' has probability 0",
    ),
    "a reward of 5": (changed("reward", 5), "reward: 5 is not in [0, 1]"),
    "a reward of -3": (changed("reward", -3.0), "reward: -3 is not in [0, 1]"),
    "a reward as a string": (changed("reward", "1"), "reward: '1' is not a number"),
    "a reward of true": (changed("reward", True), "reward: true is not a number"),
    "a NaN reward": (changed("reward", float("nan")), "reward: nan is not finite"),
    "an infinite reward": (changed("reward", float("inf")), "reward: inf is not finite"),
    "shadow probabilities summing to 1.1": (
        changed("shadows.0.candidates.0.probability", 0.9),
        "shadows[0] (egreedy-v2).candidates: the probabilities sum to 1.1, not 1",
    ),
    "a shadow probability of true": (
        changed("shadows.0.candidates.0.probability", True),
        "shadows[0] (egreedy-v2).candidates[0].probability: true is not a number",
    ),
    "a shadow scoring a tip never logged": (
        changed("shadows.0.candidates.1.tip_id", "planning-10"),
        "shadows[0] (egreedy-v2).candidates: tips ['planning-10'] are not among the "
        "decision's candidates",
    ),
    "a shadow that left a logged tip out": (
        changed("shadows.0.candidates", [{"tip_id": "focus-25", "probability": 1.0}]),
        "shadows[0] (egreedy-v2).candidates: the decision's candidates ['break-walk'] are "
        "missing",
    ),
}  # fmt: skip


@pytest.mark.parametrize("bad", IMPOSSIBLE.values(), ids=IMPOSSIBLE.keys())
def test_an_impossible_number_is_refused_naming_decision_and_field(
    bad: tuple[dict[str, Any], str],
) -> None:
    body, message = bad
    log = [HAND_MADE[1], {**body, "decision_id": "d-17"}, HAND_MADE[2]]
    with pytest.raises(LogRowError) as raised:
        traffic_from_rows(log)
    assert str(raised.value).startswith("decision 'd-17' (row 2): ")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_sum_within_the_stated_tolerance_is_one() -> None:
    near = changed("candidates.1.probability", 0.5 + PROBABILITY_TOLERANCE / 2)
    assert traffic_from_rows([near]).n == 1


@pytest.mark.parametrize("reader", ["orjson", "json"])
def test_a_nan_reward_is_refused_whichever_json_reader_reads_it(
    reader: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard library reads `NaN` as a float; orjson refuses the line as JSON."""
    if reader == "json":
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson now fails
    path = tmp_path / "log.jsonl"
    good = json.dumps(HAND_MADE[0])
    bad = good.replace('"reward": 1.0', '"reward": NaN')
    path.write_text(f"{good}\n{bad}\n")
    with pytest.raises(Exception) as raised:
        traffic_from_rows(read_log(path))
    expected = "(line 2): reward: nan is not finite" if reader == "json" else "line 2: not JSON"
    assert expected in str(raised.value)


def evaluation_runs(sqlite_uri: str) -> int:
    """How many evaluations the MLflow store at `sqlite_uri` records (0 if it was never
    created)."""
    if not Path(sqlite_uri.removeprefix("sqlite:///")).exists():
        return 0
    store = TrackingStore(sqlite_uri)
    found = store.client.get_experiment_by_name("tip-policy-sim")
    return 0 if found is None else len(store.client.search_runs([found.experiment_id]))


def test_the_cli_refuses_a_bad_log_and_records_nothing(tmp_path: Path, sqlite_uri: str) -> None:
    path = tmp_path / "log.jsonl"
    rows = [*HAND_MADE[:3], changed("reward", 5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refused = tipbench("policy", "evaluate", "--log", str(path), "--tracking-uri", sqlite_uri)
    assert_one_line_error(refused, "decision 'h1' (line 4): reward: 5 is not in [0, 1]")
    assert evaluation_runs(sqlite_uri) == 0


def test_the_cli_refuses_nan_with_the_standard_librarys_reader(
    tmp_path: Path, sqlite_uri: str
) -> None:
    """A real `tipbench` process without orjson (an `orjson` module that cannot import)."""
    blocker = tmp_path / "no-orjson"
    blocker.mkdir()
    (blocker / "orjson.py").write_text("raise ImportError('orjson is not installed here')\n")
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(HAND_MADE[0]).replace('"reward": 1.0', '"reward": NaN') + "\n")
    paths = [str(blocker), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    refused = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "policy", "evaluate", "--log", str(path),
         "--tracking-uri", sqlite_uri],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert_one_line_error(refused, "decision 'h1' (line 1): reward: nan is not finite")
    assert evaluation_runs(sqlite_uri) == 0


def test_an_empty_log_records_nothing(tmp_path: Path, sqlite_uri: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    refused = tipbench("policy", "evaluate", "--log", str(empty), "--tracking-uri", sqlite_uri)
    assert_one_line_error(refused, "the log holds no decision to evaluate: nothing recorded")
    assert evaluation_runs(sqlite_uri) == 0


def scored(reward: float) -> dict[str, Any]:
    """A `/score/egreedy-v2` decision: the shadow itself decided, always the focus tip."""
    body = row((1.0 - 1e-3, 1e-3), 0, reward, (0.5, 0.5))
    return {**body, "policy": "egreedy-v2", "route": "score", "shadows": []}


def test_score_decisions_stay_out_of_a_shadows_estimate_unless_asked() -> None:
    """`simulate --url` logged `/score` decisions of the shadow itself, which entered its
    off-policy estimate as on-policy traffic."""
    served = [row((0.5, 0.5), i % 2, 1.0 if i % 2 else 0.0, (0.1, 0.9)) for i in range(200)]
    mixed = [
        r for pair in zip(served, [scored(0.0) for _ in range(200)], strict=True) for r in pair
    ]

    alone = evaluate(traffic_from_rows(served), ["egreedy-v2"])
    default = evaluate(traffic_from_rows(mixed), ["egreedy-v2"])
    assert default.to_dict()["policies"] == alone.to_dict()["policies"]
    assert (default.decisions, default.score_left_out) == (200, 200)
    assert default.policy("egreedy-v2").estimates["dr"].value == pytest.approx(0.9, abs=0.05)
    asked = evaluate(traffic_from_rows(mixed, include_score=True), ["egreedy-v2"])
    assert (asked.decisions, asked.score_left_out) == (400, 0)
    assert asked.policy("egreedy-v2").estimates["dr"].value < 0.6  # its own zeros counted
