"""Issue 45, item 5: the budget is a ceiling. Budgets of 30, 16 and 20 spent 32, 18 and 20
(the panel showed "20 / 16"): GEPA looks at the budget only before an iteration.

One optimization of the scripted world (`support.scripted_world`; its reflection model
answers from its request) on the student's two scenarios, minibatch 2: scoring v1 costs 2,
an iteration at most 6 (the parent and the proposal on the minibatch, the proposal on both
scenarios if accepted). Iterations 1 and 2 are accepted proposals (8, then 14 spent), every
later one a skipped proposal (2 each). The same command with budgets 16, then 20, then 30
continues it; each stops before an iteration that could pass its budget.
"""

from __future__ import annotations

import re

import pytest

from support.cli import tipbench
from support.ollama_server import FakeOllama
from support.scripted_world import REFLECTION, optimize_args, rule_reflection
from tipbench.optimize import optimizations
from tipbench.tracking import TrackingStore

pytestmark = pytest.mark.slow


def test_the_budget_is_never_passed_and_spent_over_budget_is_shown(
    world: FakeOllama, sqlite_uri: str
) -> None:
    world.respond(REFLECTION, rule_reflection)
    store = TrackingStore(sqlite_uri)
    for budget, spent in ((16, 14), (20, 16), (30, 26)):
        done = tipbench(*optimize_args(world, sqlite_uri, "--budget", str(budget), "--no-heldout"))
        assert done.returncode == 0, done.stderr[-3000:]
        left = budget - spent
        assert (
            f"{spent} of {budget} evaluations spent (an iteration can spend 6: the {left} left "
            "would not cover one)" in done.stdout
        ), done.stdout
        assert f"{spent} / {budget} evaluations spent" in done.stderr  # the last iteration's
        # said before anything is spent (issue 45 item 7): the cost, then the time it takes
        before = done.stderr.split("iteration ")[0]
        spent_before = {16: "", 20: " (14 spent before)", 30: " (16 spent before)"}[budget]
        assert (
            f"cost: at most {budget - int(spent_before[2:4] or 0)} evaluations of {budget}"
            f"{spent_before}: the start on 2 training scenarios, then iterations of at most 6 (a "
            "parent and its proposal on a minibatch of 2 (the whole training set), the proposal "
            "on every training scenario if accepted)"
        ) in before, done.stderr
        measured = re.search(r"time: about \S+ \S+ at ([\d.]+) s per evaluation \(measured by "
                             r"optimize v1 \(\w+\), the same models\)", before)  # fmt: skip
        assert (measured is None) == (budget == 16), before  # none before the first run
        assert "time: not measured yet" in before or budget != 16
        (status,) = optimizations(store, "tip-bench-optimize")
        assert (status.evaluations, status.budget) == (
            spent,
            budget,
        )  # the panel's "spent / budget"
