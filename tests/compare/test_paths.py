"""A leaderboard says which generation path each model's cells took, in every format and on
the panel, and warns when one model's cells took different paths (older collects), on a
real MLflow store."""

from __future__ import annotations

from support.judged_runs import JudgedCell, uniform, write_cells
from tipbench.compare import leaderboard_document, leaderboard_for, leaderboard_view, render
from tipbench.tracking import TrackingStore

MODEL = "llamacpp:smollm2-135m"


def judged_experiment(sqlite_uri: str, paths: list[str]) -> TrackingStore:
    """Two prompts × three scenarios of one model, automatically judged, collected under
    `--structured auto` with these answer paths (`generation_path`), one per run."""
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("paths", create=True)
    cells = [
        JudgedCell(MODEL, prompt, f"s{i}", auto=uniform(9 + i), structured="auto")
        for prompt in ("v1", "v2-mentor")
        for i in range(3)
    ]
    for run_id, path in zip(write_cells(store.client, experiment_id, cells), paths, strict=True):
        store.client.set_tag(run_id, "generation_path", path)
    return store


def test_a_leaderboard_names_each_models_path(sqlite_uri: str) -> None:
    store = judged_experiment(sqlite_uri, ["schema"] * 6)
    board = leaderboard_for(store, "paths", "auto")
    note = f"Generation paths (collect --structured): {MODEL}: schema (6 cells)."
    assert note in leaderboard_document(board)["notes"]
    assert board.to_dict()["paths"] == [{"model": MODEL, "cells": {"schema": 6}, "mixed": False}]
    assert note in render([board], "md") and note in leaderboard_view(board).notes  # the panel
    assert not any("different generation paths" in n for n in leaderboard_document(board)["notes"])


def test_one_models_cells_from_different_paths_are_flagged(sqlite_uri: str) -> None:
    # free first, then schema: how cells of one model mixed before the path was chosen once
    store = judged_experiment(
        sqlite_uri, ["free", "free+schema", "schema", "schema"] + ["schema"] * 2
    )
    board = leaderboard_for(store, "paths", "auto")
    notes = leaderboard_document(board)["notes"]
    shares = "schema 4 cells, free first, schema for the rest 2 cells"
    assert f"Generation paths (collect --structured): {MODEL}: MIXED ({shares})." in notes
    (warning,) = [n for n in notes if "different generation paths" in n]
    assert warning.startswith(f"* {MODEL}'s cells took different generation paths ({shares}")
    assert "ranked across answers made differently" in warning
    assert warning in leaderboard_view(board).notes
    assert board.to_dict()["paths"][0]["mixed"] is True
