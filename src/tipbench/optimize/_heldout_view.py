"""The held-out grid of an optimization as the admin panel shows it, with the gate's verdict.

The grid is the start and the shortlist (rows) on the held-out scenarios (columns), read
from the held-out experiment's cell runs: each cell is not collected yet, failed, collected,
judged by the automatic judge, or judged by people. Only people's scores (or the combined
tier's, drawn in a judging order) can move the gate, so the panel counts the cells people
have judged and links to the judging page of that experiment. The verdict is the gate's
dry run asked now (`tipbench.promote.promote`, nothing recorded): it follows the judging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tipbench._errors import TipbenchError
from tipbench.promote import promote
from tipbench.stats import gate_fields
from tipbench.tracking import CellRun, TrackingStore

CellState = Literal["missing", "failed", "collected", "auto-judged", "judged"]
#: Where people judge an experiment's cells (the admin server's judging page).
JUDGE_PAGE = "/judge/{experiment}"


def heldout_grid(
    store: TrackingStore,
    experiment: str,
    prompts: Sequence[str],
    scenarios: Sequence[str],
) -> dict[str, Any] | None:
    """The held-out grid of `prompts` × `scenarios` in `experiment` and the gate's verdict
    there now; None if the experiment does not exist (yet)."""
    experiment_id = store.find_experiment(experiment) if experiment else None
    if experiment_id is None:
        return None
    runs = store.cell_runs(experiment_id)
    cells = {
        prompt: {scenario: _state(runs, prompt, scenario) for scenario in scenarios}
        for prompt in prompts
    }
    states = [state for row in cells.values() for state in row.values()]
    return {
        "experiment": experiment,
        "prompts": list(prompts),
        "scenarios": list(scenarios),
        "cells": cells,
        "judged": states.count("judged"),
        "total": len(states),
        "gate": _gate(store, experiment),
        "judge_page": JUDGE_PAGE.format(experiment=experiment),
    }


def _state(runs: Sequence[CellRun], prompt: str, scenario: str) -> CellState:
    """The furthest any run of the cell got (a retried cell has several)."""
    found = [r for r in runs if r.prompt_version == prompt and r.scenario_id == scenario]
    if any(r.finished and r.judged_by("human") for r in found):
        return "judged"
    if any(r.finished and r.judged_by("auto") for r in found):
        return "auto-judged"
    if any(r.finished for r in found):
        return "collected"
    return "failed" if found else "missing"


def _gate(store: TrackingStore, experiment: str) -> Mapping[str, Any]:
    try:
        decision = promote(store, experiment).decision
    except TipbenchError as exc:  # an experiment the gate cannot read yet: say why
        return {"promote": False, "error": str(exc)}
    return {
        **gate_fields(decision.conditions),
        "prompt_version": decision.prompt_version,
        "decided_how": decision.decided_how(),
    }
