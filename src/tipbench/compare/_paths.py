"""Which path each model's cells took, as a leaderboard says it (collect's `--structured`).

Under `--structured auto` a model's cells are asked one way, chosen once per model and kept
by every collect into the experiment (`collect/_path_choice.py`): freely first, with a
schema-constrained request for the tips a free answer lacks (`free-first`), or with the
schema at once (`schema`). A model's prompts are compared on equal terms only if its cells
took one path. An experiment can still hold cells of one model from different paths
(collected before the path was chosen per model): the leaderboard then says so, and its
ranking of that model's prompts comes with a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tipbench._words import counted
from tipbench.tracking import PATH_NAMES, CellRun, ModelPath, model_path


@dataclass(frozen=True)
class ModelPaths:
    """How many of a model's cells took each path."""

    model: str
    cells: tuple[tuple[ModelPath, int], ...]  # (path, cells), most cells first

    @property
    def mixed(self) -> bool:
        return len(self.cells) > 1

    @property
    def shares(self) -> str:
        """`schema 5 cells, free first, schema for the rest 1 cell`."""
        return ", ".join(
            f"{PATH_NAMES[path]} {counted(count, 'cell')}" for path, count in self.cells
        )

    def describe(self) -> str:
        """`model: schema (9 cells)`, or each path's share when they differ."""
        if not self.mixed:
            path, count = self.cells[0]
            return f"{self.model}: {PATH_NAMES[path]} ({counted(count, 'cell')})"
        return f"{self.model}: MIXED ({self.shares})"

    def to_dict(self) -> dict[str, object]:
        return {"model": self.model, "cells": dict(self.cells), "mixed": self.mixed}


def model_paths(runs: Iterable[CellRun]) -> tuple[ModelPaths, ...]:
    """Each model's paths over `runs` (those that record one), by model name."""
    taken: dict[str, Counter[ModelPath]] = {}
    for run in runs:
        path = model_path(run)
        if path is not None:
            taken.setdefault(run.model, Counter())[path] += 1
    return tuple(
        ModelPaths(model, tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))))
        for model, counts in sorted(taken.items())
    )


def paths_note(paths: tuple[ModelPaths, ...]) -> list[str]:
    """The note that says how each model's cells were asked (none without paths)."""
    if not paths:
        return []
    return [
        "Generation paths (collect --structured): " + "; ".join(p.describe() for p in paths) + "."
    ]


def mixed_paths_warnings(paths: tuple[ModelPaths, ...]) -> list[str]:
    """A warning per model whose cells took different paths: its prompts are not ranked on
    equal terms."""
    return [
        f"{p.model}'s cells took different generation paths ({p.shares}; "
        "collects from before one path was chosen per model): its prompts are ranked across "
        "answers made differently; collect it into a new experiment to compare like with like."
        for p in paths
        if p.mixed
    ]
