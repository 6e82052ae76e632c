"""Generation paths in the store: how each model's cells were asked, per cell and per collection.

Under `--structured auto` a collection chooses, once per model, between asking every cell
freely first (with a schema-constrained request for the tips a free answer lacks) and asking
with the schema at once. The choice is recorded on the collection's parent run, in the tag
`generation_paths` (one JSON object: model spec -> what was chosen and on which evidence),
so that every later collection into the experiment takes the same path; each cell run keeps
how its own answer came about (`generation_path`: `free`, `free+rest`, `free+schema`,
`schema`, `json`).

`model_path` reads a cell run's *model path* back from those two: `free-first` (its answer
was free, or free then schema, under `auto`), `schema` (schema-constrained at once, under
`auto` or `--structured schema`: the same request), `json` or `free-only` (`--structured
off`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, get_args

from tipbench.tracking._cell_run import CellRun

#: The parent-run tag holding each model's chosen path (a JSON object by model spec).
GENERATION_PATHS_TAG = "generation_paths"

#: How a model's cells are asked, as a whole.
ModelPath = Literal["free-first", "schema", "json", "free-only"]
MODEL_PATHS: tuple[ModelPath, ...] = get_args(ModelPath)
#: How reports name them.
PATH_NAMES: dict[ModelPath, str] = {
    "free-first": "free first, schema for the rest",
    "schema": "schema",
    "json": "json",
    "free-only": "free only",
}


def model_path(run: CellRun) -> ModelPath | None:
    """The model path a cell run's answer took; None for a run that does not say (a failed
    cell, or one from before paths were recorded)."""
    answer = run.generation_path
    if not answer:
        return None
    if run.structured == "off":
        return "free-only"
    if answer == "json":
        return "json"
    return "schema" if answer == "schema" else "free-first"


def encode_paths(paths: Mapping[str, Mapping[str, Any]]) -> str:
    """The tag's value: each model's choice (`path` and its evidence), by model spec."""
    return json.dumps(dict(sorted(paths.items())), separators=(",", ":"), sort_keys=True)


def decode_paths(value: str | None) -> dict[str, dict[str, Any]]:
    """The choices a parent run recorded (empty for none, or for a value not understood)."""
    if not value:
        return {}
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {
        str(model): dict(choice)
        for model, choice in decoded.items()
        if isinstance(choice, dict) and choice.get("path") in MODEL_PATHS
    }
