"""`tipbench optimize` on the bundled embedded model (SmolLM2-135M through llama.cpp) as task
model, judge and reflection model: the mechanics end to end on real models, kept short (one
training scenario, one tip, a budget of one iteration: 4 evaluations at most, no held-out
grid; the held-out grid is the scripted tests'). The 135M model rarely writes a usable
template: whether its reflections become proposals or skipped proposals, each one is
counted, with its reason, and shown; an iteration that accepts nothing spends 1 or 2 of
its 3 evaluations, and the next could pass the budget. About two minutes on an idle
machine."""

from __future__ import annotations

import re

import pytest
from mlflow import MlflowClient

from support.cli import tipbench
from tipbench.optimize import BEST_METRIC, KIND_OPTIMIZATION
from tipbench.tracking import KIND_TAG, TrackingStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a loaded machine takes long


def test_the_bundled_model_optimizes_v1_end_to_end(sqlite_uri: str) -> None:
    done = tipbench(
        "optimize", "--from", "v1", "--model", "llamacpp:smollm2-135m", "--budget", "4",
        "--train-scenarios", "student-morning", "--minibatch", "1", "--n-tips", "1",
        "--no-heldout", "--tracking-uri", sqlite_uri, timeout=1700,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Downloading artifacts" not in done.stderr  # MLflow's bars, one per read
    out = done.stdout
    assert "training on 1 scenario (student-morning), holding out 7" in out
    found = re.search(r"(\d+) evaluations, (\d+) iterations?, (\d+) proposals?, (\d+) skipped", out)
    assert found is not None, out
    evaluations, iterations, proposals, skipped = map(int, found.groups())
    assert 2 <= evaluations <= 4 and iterations == 1  # the budget is a ceiling
    assert f"{evaluations} of 4 evaluations spent" in out
    assert proposals + skipped == iterations  # one reflection per iteration, each counted
    if skipped:
        assert "skipped proposals by reason: 1 " in out
    store = TrackingStore(sqlite_uri)
    experiment = store.experiment_id("tip-bench-optimize")
    (run,) = store.find(experiment, {KIND_TAG: KIND_OPTIMIZATION})
    assert run.status == "FINISHED"
    steps = [m.step for m in MlflowClient(sqlite_uri).get_metric_history(run.run_id, BEST_METRIC)]
    assert sorted(steps) == list(range(iterations + 1))
    start = [r for r in store.cell_runs(experiment) if r.prompt_version == "v1"]
    assert [r.scenario_id for r in start] == ["student-morning"]
    assert start[0].judged_by("auto")  # the embedded judge scored the start's tip
