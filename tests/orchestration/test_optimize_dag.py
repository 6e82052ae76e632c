"""`prompt_optimize` with `dag.test()` on a real Airflow: the proposal rounds as tasks, then
the held-out grid through `bench_collect`'s own tasks, ending in the gate's dry run.

The models are the scripted world's on the fake Ollama server (real Ollama cannot be
installed here; the fake is checked with the official client in
`tests/support/test_ollama_server.py`). Its reflection model answers from its request, as a
real one does at a fixed seed (`support.scripted_world.rule_reflection`): P1 says when in the
morning, P3 (from P1) in the evening too; both beat v1 on the training scenarios.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.airflow_home import AirflowHome
from support.ollama_server import FakeOllama
from support.scripted_world import (
    EVENING,
    JUDGE,
    MORNING,
    REFLECTION,
    TASK,
    TRAINING,
    proposal,
    rule_reflection,
    said,
    scripted_world,
)
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

pytestmark = pytest.mark.slow

V1 = load_suite().prompt("v1")
P1 = proposal(said(V1, "system", MORNING), V1.user)
P3 = proposal(said(V1, "system", MORNING), said(V1, "user", EVENING))
HELD_OUT = [
    "engineer-morning", "engineer-evening", "parent-morning", "parent-evening",
    "retiree-morning", "retiree-evening",
]  # fmt: skip


@pytest.fixture
def world() -> Iterator[FakeOllama]:
    with scripted_world() as fake:
        fake.respond(REFLECTION, rule_reflection)
        yield fake


def conf(world: FakeOllama, uri: str, **extra: object) -> dict[str, object]:
    return {
        "from_version": "v1", "model": f"ollama:{TASK}", "judge_model": f"ollama:{JUDGE}",
        "reflection_model": f"ollama:{REFLECTION}", "budget": 14,
        "train_scenarios": ",".join(TRAINING), "minibatch": 2, "n_tips": 3,
        "ollama_url": world.url, "mlflow_url": uri, "experiment": "tip-bench-dagopt", **extra,
    }  # fmt: skip


def test_rounds_then_the_heldout_grid_and_the_gate(
    airflow_home: AirflowHome, world: FakeOllama, sqlite_uri: str, tipbench_home: Path
) -> None:
    run = airflow_home.dag_test("prompt_optimize", conf(world, sqlite_uri))
    assert run.state == "success", run.output[-3000:]
    assert run.tasks == {
        "plan": "success", "propose_1": "success", "propose_2": "success",
        "propose_3": "success", "heldout_conf": "success", "heldout_plan": "success",
        "heldout_collect[0]": "success", "heldout_judge": "success",
        "heldout_export": "success", "heldout_compare": "success", "gate": "success",
    }  # fmt: skip
    assert run.xcoms["plan"]["budgets"] == [8, 10, 14]  # one iteration at least per round
    rounds = [run.xcoms[f"propose_{n}"] for n in (1, 2, 3)]
    # the budget is a ceiling: round 2 (10) cannot fit another iteration (up to 6) after 8
    assert [r["evaluations"] for r in rounds] == [8, 8, 14]
    assert rounds[-1]["shortlist"] == [P3, P1]
    heldout = run.xcoms["heldout_conf"]
    assert heldout["prompts"] == f"v1,{P3},{P1}" and heldout["scenarios"] == ",".join(HELD_OUT)
    store = TrackingStore(sqlite_uri)
    cells = store.cell_runs(store.experiment_id("tip-bench-dagopt-heldout"))
    assert sorted((r.prompt_version, r.scenario_id) for r in cells) == sorted(
        (v, s) for v in ("v1", P3, P1) for s in HELD_OUT
    )
    assert run.xcoms["heldout_export"].startswith("runs:/")
    assert run.xcoms["gate"]["promote"] is False  # nobody judged the held-out cells yet
    training = store.cell_runs(store.experiment_id("tip-bench-dagopt"))
    assert {r.scenario_id for r in training} == set(TRAINING)
    assert MlflowClient(sqlite_uri).get_experiment_by_name("tip-bench-dagopt") is not None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"budget": 3}, "--budget 3 is below one iteration"),
        ({"experiment": "prod"}, "experiment: expected tip-bench-NAME"),
        ({"judge_url": "http://judge:11434"}, "judge_url: not a key of this DAG"),
        ({"heldout_experiment": "tip-bench-dagopt"}, "an experiment of its own"),
    ],
)
def test_bad_input_fails_in_plan_and_writes_nothing(
    airflow_home: AirflowHome, world: FakeOllama, sqlite_uri: str, tipbench_home: Path,
    extra: dict[str, object], message: str,
) -> None:  # fmt: skip
    run = airflow_home.dag_test("prompt_optimize", conf(world, sqlite_uri, **extra))
    assert run.state == "failed"
    assert run.tasks["plan"] == "failed"
    assert message in run.output
    assert not (tipbench_home / "suites").exists()
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()
