"""The combined tier from a real MLflow store: runs judged by both tiers (issue 23, item 1)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from support.judged_runs import JudgedCell, uniform, write_cells
from tipbench.cli import cli
from tipbench.compare import (
    beside_human,
    build_leaderboard,
    combined_board,
    leaderboard_document,
    leaderboards_for,
)
from tipbench.human_tier import (
    JudgingOrder,
    combined_state,
    current_order,
    ensure_order,
    serving_order,
)
from tipbench.tracking import CellRun, TrackingStore, metric_name, record_scores

MODEL = "ollama:m"
HUMAN = {  # the composites a human would give every run (hidden until scored)
    "v1": [14, 15, 13, 16, 14, 15, 13, 16],  # mean 14.5
    "v2": [11, 12, 10, 13, 11, 12, 10, 13],  # mean 11.5
    "v3": [9, 8, 10, 9, 8, 10, 9, 8],  # mean 8.875
}


def _write(store: TrackingStore, experiment: str) -> tuple[str, dict[str, str]]:
    """Every run judged by the automatic judge, one point below the human; no human yet."""
    experiment_id = store.experiment_id(experiment, create=True)
    cells = [
        JudgedCell(MODEL, prompt, f"s{i}", auto=uniform(c - 1))
        for prompt, values in HUMAN.items()
        for i, c in enumerate(values, start=1)
    ]
    ids = write_cells(store.client, experiment_id, cells)
    return experiment_id, {cell.run_name(): run_id for cell, run_id in zip(cells, ids, strict=True)}


def _score(store: TrackingStore, run_ids: dict[str, str], prompt: str, scenario: int) -> None:
    run_id = run_ids[f"{MODEL}|{prompt}|s{scenario}"]
    record_scores(store.client, run_id, "human", uniform(HUMAN[prompt][scenario - 1]), "ann", 0)


def _queue(store: TrackingStore, experiment_id: str, prompt: str) -> list[int]:
    """A cell's scenarios (1-based) in the order its queue serves them."""
    order = current_order(store, experiment_id)
    assert order is not None
    runs = [r for r in store.cell_runs(experiment_id) if r.prompt_version == prompt]
    runs.sort(key=lambda r: order.clock(r.run_id))
    return [int(r.scenario_id[1:]) for r in runs]


def _spread_queues(store: TrackingStore, experiment: str) -> dict[str, list[int]]:
    """Runs whose queues (drawn at random) start with each cell's lowest, highest and middle
    human score: the sample is spread, so the judge's correction is what narrows it (three
    nearly equal human scores would give a narrower interval alone, and the judge would be
    left out, as it must be)."""
    experiment_id = store.experiment_id(experiment, create=True)
    cells = [JudgedCell(MODEL, prompt, f"s{i}") for prompt in HUMAN for i in range(1, 9)]
    ids = write_cells(store.client, experiment_id, cells)
    run_of = {
        (c.prompt_version, int(c.scenario_id[1:])): r for c, r in zip(cells, ids, strict=True)
    }
    ensure_order(store, experiment_id, store.cell_runs(experiment_id, judgeable=True), "uniform")
    queues = {prompt: _queue(store, experiment_id, prompt) for prompt in HUMAN}
    by_run: dict[str, dict[int, int]] = {}
    for prompt, values in HUMAN.items():
        ranked = sorted(values)
        spread = [ranked[0], ranked[-1], ranked[3], *ranked[1:3], *ranked[4:-1]]
        by_run[prompt] = dict(zip(queues[prompt], spread, strict=True))
        for scenario, value in by_run[prompt].items():
            run_id = run_of[(prompt, scenario)]
            record_scores(store.client, run_id, "auto", uniform(value - 1), "judge", 0)
        for scenario in queues[prompt][:3]:
            value = by_run[prompt][scenario]
            record_scores(
                store.client, run_of[(prompt, scenario)], "human", uniform(value), "ann", 0
            )
    return queues


@pytest.fixture
def store(sqlite_uri: str) -> TrackingStore:
    return TrackingStore(sqlite_uri)


def test_a_judge_one_point_off_is_corrected_to_every_runs_human_mean(
    store: TrackingStore, experiment: str
) -> None:
    _spread_queues(store, experiment)
    (board,) = leaderboards_for(store, experiment, ("combined",))
    assert [row.prompt_version for row in board.rows] == ["v1", "v2", "v3"]
    means = {row.prompt_version: row.composite for row in board.rows}
    # Three human scores per cell, and the judge's on every run one point off: the
    # correction is exact, so the estimate is the mean a human would give all 8 runs.
    assert means == pytest.approx({p: float(np.mean(v)) for p, v in HUMAN.items()})
    top = board.rows[0]
    assert top.combined is not None
    assert top.combined.n_human == 3
    assert top.combined.lam == pytest.approx(1.0)
    # Three human scores, worth more than three with the judge's; not all 8: a judge that
    # matched the human on three runs has shown no spread, not proved that there is none
    # (the residual variance borrows the rubric's resolution, 3/12).
    assert 3.0 < top.combined.n_effective < 8.0
    assert top.interval.method == "ppi" and top.interval.low < top.composite < top.interval.high
    assert top.interval.value == top.composite and top.interval.n == top.n_scenarios
    # Three human-judged scenarios a cell: no comparison concludes before 6 (issue 31).
    assert board.rows[1].standing == "undecided" and board.rows[1].vs_leader is not None
    assert board.rows[1].vs_leader.min_p_value == pytest.approx(0.25)
    assert board.rows[1].vs_leader.difference.value == pytest.approx(11.5 - 14.5)
    document = board.to_dict()
    assert document["tier"] == "combined"
    assert document["judging"]["order"] == "uniform" and document["judging"]["sampling_known"]
    assert set(document["rows"][1]["combined"]) == {
        "n_human", "n_human_scenarios", "n_effective", "lambda", "sequence", "ci_clipped"
    }  # fmt: skip


def test_a_run_scored_out_of_turn_waits(store: TrackingStore, experiment: str) -> None:
    experiment_id, run_ids = _write(store, experiment)
    ensure_order(store, experiment_id, store.cell_runs(experiment_id, judgeable=True), "uniform")
    for prompt in HUMAN:
        queue = _queue(store, experiment_id, prompt)
        for scenario in queue[:2]:
            _score(store, run_ids, prompt, scenario)
    _score(store, run_ids, "v3", _queue(store, experiment_id, "v3")[5])  # skips 3 runs
    (board,) = leaderboards_for(store, experiment, ("combined",))
    assert board.judging is not None and board.judging.unused == 1
    assert board.row(MODEL, "v3").combined.n_human == 2  # type: ignore[union-attr]
    assert any("not used yet" in note for note in leaderboard_document(board)["notes"])


def test_without_an_order_the_sampling_is_unknown(store: TrackingStore, experiment: str) -> None:
    _, run_ids = _write(store, experiment)
    for prompt in HUMAN:
        for scenario in (1, 2, 3):
            _score(store, run_ids, prompt, scenario)
    human, _ = leaderboards_for(store, experiment, ("human", "auto", "combined"))
    assert human.rows  # the human tier ranks them as they are; no combined among the tiers
    (combined,) = leaderboards_for(store, experiment, ("combined",))
    assert combined.rows == ()
    assert combined.judging is not None and not combined.judging.sampling_known
    assert "sampling is unknown" in combined.judging.message
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["compare", "--experiment", experiment, "--tracking-uri", store.uri, "--tier",
              "combined"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "sampling is unknown" in result.output


def test_compare_shows_the_combined_tier_among_the_others(
    store: TrackingStore, experiment: str
) -> None:
    experiment_id, run_ids = _write(store, experiment)
    ensure_order(store, experiment_id, store.cell_runs(experiment_id, judgeable=True), "uniform")
    for prompt in HUMAN:
        for scenario in _queue(store, experiment_id, prompt)[:3]:
            _score(store, run_ids, prompt, scenario)
    runner = CliRunner(env={"COLUMNS": "250"})
    args = ["compare", "--experiment", experiment, "--tracking-uri", store.uri]
    both = json.loads(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    assert set(both) == {"human", "auto", "combined"}
    table = runner.invoke(cli, [*args, "--tier", "combined"])
    assert table.exit_code == 0, table.output
    assert "combined tiers" in table.output and "human (worth)" in table.output
    said = " ".join(table.output.split())
    assert "Detectable: 8 scenarios: the gate can detect a gap of about " in said
    assert re.search(r"\b3 \(\d\.\d\)", table.output)
    csv = runner.invoke(cli, [*args, "--tier", "combined", "--format", "csv"]).stdout
    assert "combined_n_effective" in csv.splitlines()[0]


def test_the_combined_interval_is_never_wider_than_the_human_tiers_without_saying_why() -> None:
    """Issue 43's repro: every item of the judge file scored in its order but the last three,
    a judge that tells nothing (λ = 0). The combined interval is about every run (the three
    unscored too), the human tier's about the scored ones: where it is wider (v3 here), the
    leaderboard names the cell and says why."""
    order = JudgingOrder("uniform", 10, "2026-11-28T00:00:00+00:00")
    runs = [
        CellRun(MODEL, prompt, f"s{i}", run_id=f"{prompt}-{i}",
                metrics={metric_name("auto", "composite"): 10.0 + (7 * i) % 3})
        for prompt, values in HUMAN.items()
        for i in range(1, len(values) + 1)
    ]  # fmt: skip
    listed = serving_order(combined_state(runs, order))
    runs = [
        replace(run, metrics={**run.metrics, "composite": float(HUMAN[run.prompt_version][
            int(run.scenario_id[1:]) - 1])}) if run.run_id in listed[:-3] else run
        for run in runs
    ]  # fmt: skip
    human = build_leaderboard(runs, "human")
    combined = combined_board(combined_state(runs, order), 3, "x")
    _, combined = beside_human([human, combined])
    widths = {row.name: row.interval.high - row.interval.low for row in human.rows}
    wider = {
        row.name
        for row in combined.rows
        if row.interval.high - row.interval.low > widths[row.name] * (1 + 1e-9)
    }
    assert wider == set(combined.wider_than_human) == {f"{MODEL}|v3"}
    notes = " ".join(leaderboard_document(combined)["notes"])
    assert f"Wider than in the human tier: {MODEL}|v3. This interval is about every run" in notes


def test_an_interval_past_the_scale_is_cut_at_its_end_and_says_so() -> None:
    """Every run human-scored, one cell near the top of 2–17 with one low scenario: its t
    interval runs past 17; the row shows it cut there, and a note says so."""
    values = {"v1": [17, 17, 17, 17, 17, 10, 17, 17], "v2": [9, 10, 11, 9, 10, 11, 9, 10]}
    runs = [
        CellRun(MODEL, prompt, f"s{i}", run_id=f"{prompt}-{i}",
                metrics={"composite": float(v), metric_name("auto", "composite"): float(v)})
        for prompt, vs in values.items()
        for i, v in enumerate(vs)
    ]  # fmt: skip
    order = JudgingOrder("uniform", 1, "2026-11-28T00:00:00+00:00")
    board = combined_board(combined_state(runs, order), 3, "x")
    top = board.row(MODEL, "v1")
    assert top.combined is not None and top.combined.ci_clipped
    assert top.interval.high == 17.0 and top.interval.low < top.composite < 17.0
    notes = " ".join(leaderboard_document(board)["notes"])
    cut = "Intervals cut at the composite's scale (2–17), where the t interval ran past it"
    assert f"{cut}: {MODEL}|v1." in notes


def test_a_cell_on_two_human_judged_scenarios_is_listed_not_ranked() -> None:
    """Issue 43: a cell with human scores on 2 scenarios was shown "1 / leader". The combined
    tier ranks a cell only on as many human-judged scenarios as the other tiers (3)."""
    order = JudgingOrder("uniform", 1, "2026-11-28T00:00:00+00:00")
    runs = [
        CellRun(MODEL, prompt, f"s{i}", run_id=f"{prompt}-{i}",
                metrics={metric_name("auto", "composite"): 12.0})
        for prompt in ("v1", "v2")
        for i in range(8)
    ]  # fmt: skip
    first_two = sorted((r.run_id for r in runs if r.prompt_version == "v1"), key=order.clock)[:2]
    runs = [
        replace(run, metrics={**run.metrics, "composite": 16.0 if run.prompt_version == "v1"
                              else 11.0 + int(run.scenario_id[1:]) % 2})
        if run.prompt_version == "v2" or run.run_id in first_two else run
        for run in runs
    ]  # fmt: skip
    board = combined_board(combined_state(runs, order), 3, "x")
    top = board.row(MODEL, "v1")
    assert top.combined is not None and top.combined.n_human_scenarios == 2
    assert (top.rank, top.standing) == (None, "too little data")
    assert board.row(MODEL, "v2").standing == "leader"
