"""The paths an experiment's models were collected by, so that every collect keeps them.

The first collect of a model into an experiment records the path it chose on its parent run
(the `generation_paths` tag, `tracking/_paths.py`); every later collect of that model into the
experiment takes the same path, whatever it would choose now. An experiment from before the
tag was written keeps the path its cells of the model took, if they all took one; cells of
one model from different paths (collects before the choice was made per model) are reported,
and `compare` flags them too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tipbench.collect._path_choice import PathChoice
from tipbench.tracking import (
    GENERATION_PATHS_TAG,
    KIND_COLLECTION,
    KIND_TAG,
    BackgroundWriter,
    CellRun,
    ModelPath,
    TrackingStore,
    decode_paths,
    encode_paths,
    model_path,
)


@dataclass(frozen=True)
class RecordedPaths:
    """Each model's recorded path, by parent run and as a whole; and the cells' paths."""

    by_parent: Mapping[str, Mapping[str, dict[str, Any]]] = field(default_factory=dict)
    first: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # model -> oldest record
    cells: Mapping[str, Counter[ModelPath]] = field(default_factory=dict)  # `auto` cells only

    @classmethod
    def read(
        cls, store: TrackingStore, experiment_id: str, existing: Sequence[CellRun]
    ) -> RecordedPaths:
        """What the experiment's parent runs recorded and its successful cells took."""
        parents = store.find(experiment_id, {KIND_TAG: KIND_COLLECTION})
        by_parent: dict[str, dict[str, dict[str, Any]]] = {}
        first: dict[str, dict[str, Any]] = {}
        for parent in sorted(parents, key=lambda run: run.start_time):
            recorded = decode_paths(parent.tags.get(GENERATION_PATHS_TAG))
            by_parent[parent.run_id] = recorded
            for model, record in recorded.items():
                first.setdefault(model, record)
        cells: dict[str, Counter[ModelPath]] = {}
        for run in existing:
            path = model_path(run) if run.ok and run.structured == "auto" else None
            if path is not None:
                cells.setdefault(run.model, Counter())[path] += 1
        return cls(by_parent, first, cells)

    def choice(self, model: str) -> PathChoice | None:
        """The path `model` keeps in this experiment (None: it has none yet)."""
        if model in self.first:
            return PathChoice.recorded(self.first[model])
        taken = self.cells.get(model)
        if taken and len(taken) == 1:
            (path,) = taken
            return PathChoice(path, "cells")
        return None

    def mixed(self) -> list[str]:
        """A warning for each model whose cells in the experiment took different paths."""
        return [
            f"the experiment holds cells of {model} from different paths ("
            + ", ".join(f"{path} {count}" for path, count in sorted(taken.items()))
            + "; collects from before one path was chosen per model): its prompts are not "
            "compared on equal terms; collect it into a new experiment to compare like with like"
            for model, taken in sorted(self.cells.items())
            if len(taken) > 1 and model not in self.first
        ]

    def record(
        self, writer: BackgroundWriter, parent: str, chosen: Mapping[str, PathChoice]
    ) -> None:
        """Queue the parent's tag: what it recorded before, with this collection's choices
        (an experiment's path as first recorded)."""
        records = dict(self.by_parent.get(parent, {}))
        for model, choice in chosen.items():
            records[model] = self.first.get(model) or choice.record()
        value = encode_paths(records)
        writer.submit(
            "generation paths", lambda client: client.set_tag(parent, GENERATION_PATHS_TAG, value)
        )
