"""Judging in the order that decides, and knowing when to stop (issue 23, items 3 and 4), on
a real MLflow store: the order a judge file lists, the run the page serves next, and what
the page says after each save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.judged_runs import JudgedCell, scores, write_cells
from tipbench.cli import cli
from tipbench.human_tier import (
    current_order,
    judging_state,
    judging_status,
    next_run,
    score_floor,
    serving_order,
)
from tipbench.tracking import CellRun, Scores, TrackingStore, record_scores

MODEL = "ollama:m"
HIGH = scores((5, 5, 4, 1, 0), (5, 4, 5, 1, 0))  # composite 15.5
LOW = scores((2, 2, 1, 1, 0), (1, 2, 2, 1, 0))  # composite 6.5


def _experiment(store: TrackingStore, name: str, prompts: int = 3) -> str:
    """`prompts` cells on 6 scenarios, scored by the automatic judge only."""
    experiment_id = store.experiment_id(name, create=True)
    cells = [
        JudgedCell(MODEL, f"v{p}", f"s{s}", auto=HIGH if p == 1 else LOW)
        for p in range(1, prompts + 1)
        for s in range(1, 7)
    ]
    write_cells(store.client, experiment_id, cells, with_candidates=True)
    return experiment_id


def _human(store: TrackingStore, run: CellRun, values: dict[str, Scores]) -> None:
    record_scores(store.client, run.run_id, "human", values, "ann", run.scores_version("human"))


@pytest.fixture
def store(sqlite_uri: str) -> TrackingStore:
    return TrackingStore(sqlite_uri)


def test_the_page_serves_every_cell_first_then_the_open_comparisons(
    store: TrackingStore, experiment: str
) -> None:
    _experiment(store, experiment)
    served: list[str] = []
    for _ in range(3):
        state = judging_state(store, experiment)
        run = next_run(state)
        assert run is not None
        served.append(run.prompt_version)
        _human(store, run, HIGH if run.prompt_version == "v1" else LOW)
    assert sorted(served) == ["v1", "v2", "v3"]  # one score in every cell first
    state = judging_state(store, experiment)
    assert state.order is not None and state.order.kind == "active"  # started by the first
    run = next_run(state)
    assert run is not None
    queue = sorted(
        (r for r in state.runs if r.prompt_version == run.prompt_version and r.judge_pending),
        key=lambda r: state.order.clock(r.run_id),  # type: ignore[union-attr]
    )
    assert run.run_id == queue[0].run_id  # a cell's runs come in its queue's order


def test_a_uniform_order_lists_the_pending_runs_by_clock(
    store: TrackingStore, experiment: str
) -> None:
    _experiment(store, experiment, prompts=2)
    state = judging_state(store, experiment, "uniform")
    order = state.order
    assert order is not None and order.kind == "uniform"
    listed = serving_order(state)
    clocks = [order.clock(run_id) for run_id in listed]
    assert len(listed) == 12 and clocks == sorted(clocks)
    assert judging_status(state).message.startswith(
        "every cell needs human scores on at least 6 scenarios before the leader can be decided"
    )


def test_the_judging_says_when_to_stop(store: TrackingStore, experiment: str) -> None:
    """Five of six runs per cell scored before the order began: they count as they are.
    One more judgement per cell, and the leader (15.5 against 6.5) is decided."""
    experiment_id = _experiment(store, experiment, prompts=2)
    for run in store.cell_runs(experiment_id, judgeable=True):
        if run.scenario_id != "s6":
            _human(store, run, HIGH if run.prompt_version == "v1" else LOW)
    state = judging_state(store, experiment)
    assert state.order is not None and len(state.order.known) == 10
    status = judging_status(state)
    assert not status.decided and status.expected_more == 2
    assert status.message == (
        "every cell needs human scores on at least 6 scenarios before the leader can be "
        "decided: at least 2 more judgments expected"
    )
    for _ in range(2):
        run = next_run(judging_state(store, experiment))
        assert run is not None and run.scenario_id == "s6"
        _human(store, run, HIGH if run.prompt_version == "v1" else LOW)
    done = judging_status(judging_state(store, experiment))
    assert done.decided and done.message == "the leader is decided: you can stop"
    assert next_run(judging_state(store, experiment)) is None


def test_judge_export_lists_the_runs_in_the_judging_order(
    store: TrackingStore, experiment: str, tmp_path: Path
) -> None:
    _experiment(store, experiment)
    out = tmp_path / "judge.json"
    args = ["judge", "export", "--experiment", experiment, "--tracking-uri", store.uri]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "in the experiment's active order since" in result.output
    assert "every cell needs human scores on at least 6 scenarios" in result.output
    # Said before anyone judges (issue 43): what the gate can find on these 6 scenarios.
    assert "6 scenarios: the gate can detect a gap of about " in result.output
    items = [item["run_id"] for item in json.loads(out.read_text())["items"]]
    assert items == serving_order(judging_state(store, experiment))
    names = {r.run_id: r.prompt_version for r in store.cell_runs(store.experiment_id(experiment))}
    assert sorted(names[run_id] for run_id in items[:3]) == ["v1", "v2", "v3"]
    again = CliRunner().invoke(cli, [*args, "--out", str(out), "--order", "uniform"])
    assert again.exit_code == 0, again.output
    order = current_order(store, store.experiment_id(experiment))
    assert order is not None and order.kind == "uniform"
    assert "uniform order since" in again.output
    # Each item records its inclusion probability: within its cell (6 runs, a uniform
    # order), the j-th item of the cell's queue is scored with probability j/6 once reached.
    uniform = json.loads(out.read_text())["items"]
    for prompt in ("v1", "v2", "v3"):
        mine = [item["inclusion"] for item in uniform if names[item["run_id"]] == prompt]
        assert mine == pytest.approx([j / 6 for j in range(1, 7)])


def test_three_scenarios_cannot_be_decided_and_say_so(
    store: TrackingStore, experiment: str, tmp_path: Path
) -> None:
    """The README's grid (3 scenarios): no count of judgments can decide the leader, so the
    status (what the page, the API, `judge export`, `compare` and `run` show) says so instead
    of counting down, before and after human scores (issue 31, item 5)."""
    experiment_id = store.experiment_id(experiment, create=True)
    cells = [
        JudgedCell(MODEL, f"v{p}", f"s{s}", auto=HIGH if p == 1 else LOW)
        for p in (1, 2)
        for s in (1, 2, 3)
    ]
    write_cells(store.client, experiment_id, cells, with_candidates=True)
    for _ in range(4):
        status = judging_status(judging_state(store, experiment))
        assert status.message == "cannot be decided on 3 scenarios: collect at least 6"
        assert status.expected_more is None and not status.decided
        run = next_run(judging_state(store, experiment))
        assert run is not None
        _human(store, run, HIGH if run.prompt_version == "v1" else LOW)
    out = tmp_path / "judge.json"
    args = ["judge", "export", "--experiment", experiment, "--tracking-uri", store.uri]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "cannot be decided on 3 scenarios: collect at least 6" in result.output
    assert "more judgment" not in result.output


def test_the_floor_of_each_score_column() -> None:
    """The composite adds the rubric's three integer criteria (3/12); a criterion, or a flag,
    is one integer score (1/12)."""
    assert score_floor("composite") == pytest.approx(0.25)
    assert score_floor("relevance") == score_floor("format_ok") == pytest.approx(1 / 12)
