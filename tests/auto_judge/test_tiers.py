"""The tiers side by side on a real store: agreement figures and the disagreement queue."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
from mlflow import MlflowClient
from sklearn.metrics import cohen_kappa_score

from support.cells import record_cells
from support.cli import tipbench
from tipbench.auto_judge import export_disagreements
from tipbench.human_tier import apply_judge_file
from tipbench.tracking import Scores, TrackingStore, record_scores

# Per run: (human, auto) scores of its two candidates.
HUMAN = [(4, 3, 5, 1, 0), (2, 2, 3, 1, 0), (5, 4, 4, 1, 0), (1, 2, 2, 0, 1)]
AUTO = [(4, 3, 4, 1, 0), (4, 2, 3, 1, 0), (5, 5, 4, 1, 0), (3, 2, 2, 1, 1)]


def judged_store(uri: str, experiment: str) -> list[str]:
    run_ids = record_cells(uri, experiment, n_scenarios=2)  # 2 runs × 2 candidates
    client = TrackingStore(uri).client
    for index, run_id in enumerate(run_ids):
        pair = slice(2 * index, 2 * index + 2)
        human = {f"c{i + 1}": Scores(*s) for i, s in enumerate(HUMAN[pair])}
        auto = {f"c{i + 1}": Scores(*s) for i, s in enumerate(AUTO[pair])}
        record_scores(client, run_id, "human", human, "alice", 0)
        record_scores(client, run_id, "auto", auto, "llamacpp:smollm2-135m", 0)
    return run_ids


def test_agreement_matches_reference_implementations(sqlite_uri: str, experiment: str) -> None:
    judged_store(sqlite_uri, experiment)
    result = tipbench(
        "judge", "agreement", "--experiment", experiment, "--tracking-uri", sqlite_uri,
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["candidates"] == 4
    for index, name in enumerate(("relevance", "actionability", "tone")):
        human = [s[index] for s in HUMAN]
        auto = [s[index] for s in AUTO]
        labels = [1, 2, 3, 4, 5]
        kappa = cohen_kappa_score(human, auto, weights="quadratic", labels=labels)
        alpha = krippendorff.alpha(
            reliability_data=[human, auto], level_of_measurement="ordinal", value_domain=labels
        )
        assert figures[name]["n"] == 4
        assert abs(figures[name]["kappa"] - kappa) < 1e-9
        assert abs(figures[name]["alpha"] - alpha) < 1e-9
    assert figures["relevance"]["exact"] == 0.5 and figures["relevance"]["within_1"] == 0.5
    assert figures["format_ok"]["exact"] == 0.75


def test_disagreement_queue_round_trip(sqlite_uri: str, experiment: str, tmp_path: Path) -> None:
    run_ids = judged_store(sqlite_uri, experiment)
    out = tmp_path / "queue.json"

    result = export_disagreements(TrackingStore(sqlite_uri), experiment, 1.0, out)

    data = json.loads(out.read_text())
    queued = [(item["run_id"], c["id"]) for item in data["items"] for c in item["candidates"]]
    # relevance 2 vs 4 (run 0, c2) and 1 vs 3 (run 1, c2) differ by more than 1
    assert sorted(queued) == sorted([(run_ids[0], "c2"), (run_ids[1], "c2")])
    assert result.candidates == 2
    candidate = data["items"][0]["candidates"][0]
    assert candidate["scores"]["relevance"] is None
    assert set(candidate["previous"]) == {"human", "auto"}

    for item in data["items"]:
        for c in item["candidates"]:
            c["scores"].update(relevance=3, actionability=2, tone=3)
    out.write_text(json.dumps(data))
    applied = apply_judge_file(TrackingStore(sqlite_uri), experiment, out, "alice")

    assert applied.applied == 2
    client = MlflowClient(sqlite_uri)
    run = client.get_run(run_ids[0])
    assert run.data.tags["human_scores_version"] == "2"
    assert run.data.metrics["relevance"] == (4 + 3) / 2  # c1 kept, c2 re-scored
    assert run.data.metrics["auto_relevance"] == (4 + 4) / 2  # the auto tier is untouched
