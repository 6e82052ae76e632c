"""Promotion on the combined tier where both tiers have scores (issue 23, item 2), on a real
MLflow store and Prompt Registry."""

from __future__ import annotations

import json

from mlflow import MlflowClient

from support.cli import tipbench
from support.judged_runs import JudgedCell, scores, write_cells
from tipbench.human_tier import ensure_order
from tipbench.promote import promote_prompt
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore, record_scores

MODEL = "ollama:qwen2.5:1.5b"
SCENARIOS = [s.id for s in load_suite().scenarios]  # 8
# Composites per scenario (two candidates a run, both alike): the human's; the automatic
# judge (never calibrated) scores every run two points lower on relevance or so.
HUMAN = {
    "v1": (9, 8, 10, 9, 8, 10, 9, 9),
    "v2-mentor": (13, 12, 14, 13, 14, 12, 13, 13),
}
SHORT = "v3-few-shot"  # a prompt that ran on 5 scenarios only (`_experiment`'s `short`)
_TRIPLES = {
    6: (2, 1, 1),
    8: (2, 2, 2),
    9: (3, 2, 2),
    10: (3, 3, 2),
    12: (4, 3, 3),
    13: (4, 4, 3),
    14: (4, 4, 4),
}


def _scores(composite: int, judge: bool = False) -> dict[str, object]:
    r, a, t = _TRIPLES[composite]
    if judge:  # an uncalibrated judge: harsher on relevance, in its own way per run
        r = max(1, r - 1 - composite % 2)
    return scores((r, a, t, 1, 0), (r, a, t, 1, 0))


def _experiment(
    uri: str,
    experiment: str,
    human_before_order: bool = False,
    human_runs: int = 6,
    short: bool = False,
) -> None:
    """Both prompts on the 8 scenarios, the judge on every run; the human on 6 runs per
    cell (the scenarios a paired test needs; `human_runs` in v1), in the experiment's judging
    order (or before any, with `human_before_order`). With `short`, a third prompt far
    behind on 5 scenarios, every run scored by both tiers."""
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(experiment, create=True)
    human = HUMAN | ({SHORT: (6, 6, 6, 6, 6)} if short else {})
    cells = [
        JudgedCell(MODEL, prompt, scenario, auto=_scores(human[prompt][i], judge=True))
        for prompt in human
        for i, scenario in enumerate(SCENARIOS[: len(human[prompt])])
    ]
    ids = write_cells(store.client, experiment_id, cells)
    suite = load_suite()
    for cell, run_id in zip(cells, ids, strict=True):  # the template collect recorded
        store.client.set_tag(run_id, "prompt_hash", suite.prompt(cell.prompt_version).template_hash)
    runs = store.cell_runs(experiment_id, judgeable=True)
    order = None if human_before_order else ensure_order(store, experiment_id, runs, "uniform")
    for prompt in human:
        mine = [r for r in runs if r.prompt_version == prompt]
        if order is not None:
            mine.sort(key=lambda r: order.clock(r.run_id))
        for run in mine[: human_runs if prompt == "v1" else 6]:
            value = human[prompt][SCENARIOS.index(run.scenario_id)]
            record_scores(store.client, run.run_id, "human", _scores(value), "ann", 0)  # type: ignore[arg-type]


def _promote(uri: str, experiment: str, *args: str) -> tuple[int, str]:
    result = tipbench("promote", "--experiment", experiment, "--tracking-uri", uri, *args)
    return result.returncode, result.stdout


def test_the_combined_tier_decides_where_both_tiers_have_scores(
    sqlite_uri: str, experiment: str
) -> None:
    """The automatic judge was never calibrated: both tiers alone would refuse. The combined
    tier uses it only as a predictor the human scores correct, and promotes v2-mentor."""
    _experiment(sqlite_uri, experiment)
    code, out = _promote(sqlite_uri, experiment)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == f"PROMOTE {MODEL}|v2-mentor (production now: none)"
    assert lines[1].startswith(
        "decided by the combined tier: both tiers have scores, drawn in the experiment's "
        "uniform judging order: 12 human-judged runs, worth "
    )
    assert lines[2].startswith("  [x] enough judged: 8 scenarios, 6 human-judged runs (worth ")
    assert lines[2].endswith(" on 6 of them")
    assert lines[3].startswith("  [x] sampling known: every human score used was drawn in the ")
    assert "NOT calibrated" in lines[3]  # reported, not required
    assert lines[4].startswith(
        f"  [x] ranks first: the combined tier ranks {MODEL}|v2-mentor first: every other "
        "cell's confidence sequence lies below it (the leader is decided"
    )
    assert lines[5] == "  [x] beats production: nothing is in production yet"
    assert "nan" not in out  # issue 43: "worth nan with the judge's scores"

    as_json = json.loads(_promote(sqlite_uri, experiment, "--format", "json")[1])
    assert as_json["decided_by"]["tier"] == "combined"
    assert as_json["evidence"]["combined"]["combined"]["n_human"] == 6
    assert as_json["evidence"]["anytime"]["decided"] is True


def test_the_combined_tier_measures_the_gain_over_production(
    sqlite_uri: str, experiment: str
) -> None:
    _experiment(sqlite_uri, experiment)
    promote_prompt(MlflowClient(sqlite_uri), "tipbench-tips", load_suite().prompt("v1"), {})
    code, out = _promote(sqlite_uri, experiment, "--margin", "2")
    assert code == 0, out
    beats = out.splitlines()[5]
    assert beats.startswith("  [x] beats production: combined gain over v1: +")
    code, out = _promote(sqlite_uri, experiment, "--margin", "6")
    assert code == 3
    assert out.splitlines()[5].endswith("; below the margin 6")


def test_human_scores_of_unknown_sampling_leave_it_to_both_tiers(
    sqlite_uri: str, experiment: str
) -> None:
    _experiment(sqlite_uri, experiment, human_before_order=True)
    code, out = _promote(sqlite_uri, experiment)
    assert code == 3
    assert out.splitlines()[1] == (
        "decided by both tiers: the combined tier is refused: the human scores' sampling is "
        "unknown: they were given before any judging order (tipbench judge export or the "
        "judging page starts one)"
    )
    assert "[ ] judge calibrated" in out


def _no_constants(name: str) -> float:
    raise AssertionError(f"{name} is not JSON")


def test_a_gain_without_a_sequence_yet_is_null_in_the_evidence(
    sqlite_uri: str, experiment: str
) -> None:
    """Production's cell has human scores on 3 scenarios: its comparison with the candidate
    has no confidence sequence yet. The JSON says null there (it said -Infinity and
    Infinity, which a strict parser refuses: issue 33)."""
    _experiment(sqlite_uri, experiment, human_runs=3)
    promote_prompt(MlflowClient(sqlite_uri), "tipbench-tips", load_suite().prompt("v1"), {})
    _, out = _promote(sqlite_uri, experiment, "--format", "json")
    document = json.loads(out, parse_constant=_no_constants)
    assert document["decided_by"]["tier"] == "combined", document["decided_by"]
    gain = document["evidence"]["vs_production"]["combined"]
    sequence = gain["sequence"]
    assert sequence["method"] == "sequence" and (sequence["low"], sequence["high"]) == (None, None)
    assert gain["n_pairs"] == 3 and gain["difference"]["value"] > 0


def test_a_cell_short_of_scenarios_does_not_block_the_combined_gate(
    sqlite_uri: str, experiment: str
) -> None:
    """A third prompt ran on 5 of the 8 scenarios, every run judged, 7 points behind: before,
    the gate said "cannot be decided on 5 scenarios" however much was judged. It is set
    aside with a note, and the gate decides between the two others."""
    _experiment(sqlite_uri, experiment, short=True)
    code, out = _promote(sqlite_uri, experiment)
    assert code == 0, out
    assert out.splitlines()[0] == f"PROMOTE {MODEL}|v2-mentor (production now: none)"
    assert f"set aside, too few scenarios to compare: {MODEL}|{SHORT} (5 scenarios)" in out
    assert "cannot be decided" not in out
