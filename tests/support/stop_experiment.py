"""An experiment a few judgements away from a decided leader, for the judging tests.

Two cells (prompts v1 and v2 of one model) on eight scenarios, every run scored by the
automatic judge (close to the human); the human has scored six of each cell's eight runs
already (they stand for themselves once a judging order begins, and cover the 6 scenarios
a comparison needs). v1's runs score about 15, v2's about 7: one more judgement in each
cell decides the leader, before every run is judged.
"""

from __future__ import annotations

from support.judged_runs import JudgedCell, write_cells
from tipbench.tracking import Scores

MODEL = "ollama:m"
_TRIPLES = {15: (5, 4, 4), 16: (5, 5, 4), 14: (4, 4, 4), 7: (2, 2, 1), 6: (2, 1, 1), 8: (2, 2, 2)}
COMPOSITES = {"v1": (15, 16, 14, 15, 16, 14, 15, 16), "v2": (7, 6, 8, 7, 6, 8, 7, 6)}
OPEN = {("v1", 7), ("v1", 8), ("v2", 7), ("v2", 8)}


def human_scores(prompt: str, scenario: int) -> dict[str, Scores]:
    """What the human gives the two candidates of a run (both the same)."""
    r, a, t = _TRIPLES[COMPOSITES[prompt][scenario - 1]]
    return {"c1": Scores(r, a, t, 1, 0), "c2": Scores(r, a, t, 1, 0)}


def _auto(prompt: str, scenario: int) -> dict[str, Scores]:
    human = human_scores(prompt, scenario)
    first = human["c1"]
    return {
        "c1": first,
        "c2": Scores(max(first.relevance - 1, 1), *list(first.as_dict().values())[1:]),
    }


def write_stop_experiment(client: object, experiment_id: str) -> list[str]:
    """Write the runs; return the ids of the four the human has not scored."""
    cells = [
        JudgedCell(
            MODEL,
            prompt,
            f"s{s}",
            human=None if (prompt, s) in OPEN else human_scores(prompt, s),
            auto=_auto(prompt, s),
        )
        for prompt in ("v1", "v2")
        for s in range(1, 9)
    ]
    ids = write_cells(client, experiment_id, cells, with_candidates=True)  # type: ignore[arg-type]
    return [
        run_id
        for cell, run_id in zip(cells, ids, strict=True)
        if (cell.prompt_version, int(cell.scenario_id[1:])) in OPEN
    ]
