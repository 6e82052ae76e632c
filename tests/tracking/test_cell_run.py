"""The cell run's layout read back from a real SQLite store, as collect and the judges write it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from support.cells import record_cells
from tipbench.suite import load_suite
from tipbench.tracking import (
    CANDIDATES_FILE,
    CandidatesFile,
    Scores,
    TrackingStore,
    cell_filter,
    record_scores,
)

TIPS = ("Start the lab report intro now.", "Email Dr. Ruiz before noon.")


def test_a_recorded_cell_reads_back_as_collect_wrote_it(sqlite_uri: str) -> None:
    record_cells(sqlite_uri, "layout", prompts=("v1", "v2-mentor"), n_scenarios=2, tips=TIPS)
    store = TrackingStore(sqlite_uri)
    runs = store.cell_runs(store.experiment_id("layout"))
    suite = load_suite()
    scenarios = {s.id: s for s in suite.select_scenarios(2)}

    assert len(runs) == 4
    for run in runs:
        assert run.model == "llamacpp:smollm2-135m" and run.backend == "llamacpp"
        assert run.name == f"{run.model}|{run.prompt_version}|{run.scenario_id}"
        assert run.scenario_hash == scenarios[run.scenario_id].content_hash
        assert run.prompt_hash == suite.prompt(run.prompt_version).template_hash
        assert (run.rubric, run.suite, run.cell_status) == ("tip-v1", suite.label, "ok")
        assert run.finished and run.judge_pending and run.error is None
        assert run.candidate_count == 2 and run.settings["n_tips"] == "2"
        assert run.scenario_key == f"{run.scenario_id}#{run.scenario_hash}"
        assert not run.judged_by("human") and run.scores("human") == {}


def test_candidates_file_is_the_model_of_what_collect_logs(sqlite_uri: str) -> None:
    (run_id,) = record_cells(sqlite_uri, "layout", n_scenarios=1, tips=TIPS)
    store = TrackingStore(sqlite_uri)
    with tempfile.TemporaryDirectory() as tmp:
        path = store.client.download_artifacts(run_id, CANDIDATES_FILE, tmp)
        document = CandidatesFile.model_validate_json(Path(path).read_bytes())
    assert [(c.id, c.text) for c in document.candidates] == [("c1", TIPS[0]), ("c2", TIPS[1])]
    assert document.parse_method == "json" and document.scenario["id"]
    with pytest.raises(ValidationError, match="format_ok"):
        CandidatesFile.model_validate(
            {**document.model_dump(), "candidates": [{"id": "c1", "text": "x", "format_ok": 2,
                                                      "overlong": 0}]}
        )  # fmt: skip


def test_filters_select_judgeable_pending_and_prompt_runs(sqlite_uri: str) -> None:
    run_ids = record_cells(sqlite_uri, "layout", prompts=("v1", "v2-mentor"), tips=TIPS)
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("layout")
    scores = {"c1": Scores(4, 3, 5, 1, 0), "c2": Scores(2, 2, 2, 1, 1)}
    record_scores(store.client, run_ids[0], "human", scores, "ana", previous_version=0)

    (judged,) = [r for r in store.cell_runs(experiment_id) if r.run_id == run_ids[0]]
    assert judged.scores("human") == scores and judged.scores_version("human") == 1
    assert not judged.judge_pending and judged.metrics["composite"] == pytest.approx(10.5)
    pending = {r.run_id for r in store.cell_runs(experiment_id, pending=True)}
    assert pending == set(run_ids[1:])
    assert len(store.cell_runs(experiment_id, judgeable=True)) == len(run_ids)
    v2 = store.cell_runs(experiment_id, prompt_version="v2-mentor")
    assert {r.prompt_version for r in v2} == {"v2-mentor"} and len(v2) == len(run_ids) // 2


def test_a_quote_cannot_end_the_filter() -> None:
    with pytest.raises(ValueError, match="quote"):
        cell_filter(prompt_version="v1' OR tags.x = 'y")
