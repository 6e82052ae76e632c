"""A stale judge file never undoes newer scores, on a real MLflow store: `apply` refuses the
runs scored by someone else since the file was exported (naming who and when), writes the
rest, and with --force writes them too while history keeps every version."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from support.cells import FIVE_TIPS, record_cells
from support.cli import tipbench
from tipbench.auto_judge import export_disagreements
from tipbench.human_tier import JudgeFile, apply_judge_file, apply_judgements, export_pending
from tipbench.tracking import SOURCE_PAGE, Scores, TrackingStore, record_scores

WHEN = r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


def export(uri: str, experiment: str, path: Path) -> dict[str, Any]:
    export_pending(TrackingStore(uri), experiment, path)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def save(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def score(candidate: dict[str, Any], relevance: int) -> None:
    candidate["scores"].update(relevance=relevance, actionability=3, tone=5)


def by_id(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in item["candidates"]}


def page_save(uri: str, experiment: str, item: dict[str, Any], judge: str) -> None:
    """What the judging page's save does (the API calls the same function)."""
    judge_file = JudgeFile.model_validate(
        {"experiment": experiment, "exported_at": "2026-01-01T00:00:00+00:00",
         "rubric": {"id": "", "text": []}, "items": [item]}
    )  # fmt: skip
    result = apply_judgements(
        TrackingStore(uri), experiment, judge_file, judge, written_from=SOURCE_PAGE
    )
    assert not result.refused and result.versions, result


def apply_cli(uri: str, experiment: str, path: Path, *options: str) -> Any:
    return tipbench(
        "judge", "apply", str(path), "--experiment", experiment, "--tracking-uri", uri, *options
    )


def test_reapplying_an_old_file_does_not_revert_a_later_correction(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    run_ids = record_cells(sqlite_uri, experiment)  # 2 runs × 2 candidates
    store = TrackingStore(sqlite_uri)
    for run_id in run_ids:  # the automatic judge disagrees on relevance: a re-check queue
        auto = {cid: Scores(1, 3, 5, 1, 0) for cid in ("c1", "c2")}
        record_scores(store.client, run_id, "auto", auto, "llamacpp:smollm2-135m", 0)
    old = export(sqlite_uri, experiment, tmp_path / "judge.json")
    for item in old["items"]:
        for candidate in item["candidates"]:
            score(candidate, relevance=4)
    old_file = save(old, tmp_path / "judge.json")
    assert apply_judge_file(store, experiment, old_file, "alice").applied == 2  # version 1

    # A later correction, through the disagreement queue: relevance 4 → 2 everywhere.
    recheck = tmp_path / "recheck.json"
    export_disagreements(store, experiment, 1.0, recheck)
    queue = json.loads(recheck.read_text())
    for item in queue["items"]:
        for candidate in item["candidates"]:
            score(candidate, relevance=2)
    assert apply_judge_file(store, experiment, save(queue, recheck), "carol").applied == 2

    reapplied = apply_cli(sqlite_uri, experiment, old_file)

    assert reapplied.returncode == 1, reapplied.stderr
    assert reapplied.stdout.startswith(
        "applied 0 runs, 0 unchanged, 0 not completely scored yet, 2 refused"
    )
    refusals = [line for line in reapplied.stderr.splitlines() if "refused:" in line]
    assert len(refusals) == 2
    pattern = (
        r"  refused: items\[\d\] \(run (\w+)\): scored since this file was exported "
        rf"\(version 0 then, now version 2, by carol from a judge file at {WHEN}\); not "
        r"written: export again onto this file to merge theirs in, or apply --force to keep "
        r"yours$"
    )
    assert all(re.match(pattern, line) for line in refusals), refusals
    client = MlflowClient(sqlite_uri)
    assert all(client.get_run(r).data.metrics["relevance"] == 2 for r in run_ids)

    forced = apply_cli(sqlite_uri, experiment, old_file, "--force")

    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith("applied 2 runs")
    assert "forced: items[0]" in forced.stderr and "stays in the run's history" in forced.stderr
    history = client.get_metric_history(run_ids[0], "relevance")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
        (1, 4), (2, 2), (3, 4),
    ]  # fmt: skip
    versions = {a.path for a in client.list_artifacts(run_ids[0], "human_scores")}
    assert versions == {f"human_scores/v{n}.json" for n in (1, 2, 3)}


def test_a_file_may_correct_what_it_wrote_itself(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    for candidate in data["items"][0]["candidates"]:
        score(candidate, relevance=4)
    path = save(data, tmp_path / "judge.json")
    store = TrackingStore(sqlite_uri)
    assert apply_judge_file(store, experiment, path).applied == 1

    score(data["items"][0]["candidates"][0], relevance=1)  # a slip, corrected in the file
    again = apply_judge_file(store, experiment, save(data, path))

    assert (again.applied, again.refused) == (1, [])
    run = MlflowClient(sqlite_uri).get_run(run_id)
    assert run.data.metrics["relevance"] == (1 + 4) / 2
    assert run.data.tags["human_scores_version"] == "2"


def test_a_stale_partial_file_never_clears_a_draft_made_since(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """A file that scored nothing of a run leaves it alone; one that scored some of it is
    refused rather than dropping the other judge's draft."""
    first_id, second_id = record_cells(sqlite_uri, experiment, tips=FIVE_TIPS)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    first = next(i for i in data["items"] if i["run_id"] == first_id)
    second = next(i for i in data["items"] if i["run_id"] == second_id)
    for item in (first, second):  # bob scores c1 of each run on the page meanwhile
        theirs = json.loads(json.dumps(item))
        score(by_id(theirs)["c1"], relevance=5)
        page_save(sqlite_uri, experiment, theirs, "bob")
    score(by_id(second)["c2"], relevance=2)  # the file scores c2 of the second run only

    result = apply_judge_file(
        TrackingStore(sqlite_uri), experiment, save(data, tmp_path / "a.json")
    )

    assert result.untouched == 1 and [s.run_id for s in result.refused] == [second_id]
    assert result.refused[0].current.judged_by == "bob"
    client = MlflowClient(sqlite_uri)
    for run_id in (first_id, second_id):
        draft = json.loads(client.get_run(run_id).data.tags["human_draft"])
        assert draft == {"c1": [5, 3, 5, 1, 0]}


def test_a_reexport_merges_a_draft_made_since_and_keeps_a_clash_for_apply(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    (run_id,) = record_cells(sqlite_uri, experiment, n_scenarios=1, tips=FIVE_TIPS)
    out = tmp_path / "judge.json"
    data = export(sqlite_uri, experiment, out)
    (item,) = data["items"]
    theirs = json.loads(json.dumps(item))  # bob opens the same run on the page
    score(by_id(theirs)["c2"], relevance=5)
    page_save(sqlite_uri, experiment, theirs, "bob")  # version 1: a draft of c2
    score(by_id(item)["c1"], relevance=4)  # alice's work in progress, not applied
    save(data, out)

    store = TrackingStore(sqlite_uri)
    merged = export_pending(store, experiment, out)

    data = json.loads(out.read_text())
    (item,) = data["items"]
    assert by_id(item)["c1"]["scores"]["relevance"] == 4  # alice's
    assert by_id(item)["c2"]["scores"]["relevance"] == 5  # bob's
    assert item["scores_version"] == 1 and merged.notes == ()
    applied = apply_judge_file(store, experiment, out)
    assert (applied.drafted, applied.refused) == (1, [])  # version 2, from alice's file

    # Both change c3, differently: the re-export keeps alice's and the file's old version,
    # so that `apply` refuses the run until she settles it.
    theirs = json.loads(json.dumps(item))
    theirs["scores_version"] = 2  # what the page loads now
    score(by_id(theirs)["c3"], relevance=3)
    page_save(sqlite_uri, experiment, theirs, "bob")  # version 3
    score(by_id(item)["c3"], relevance=1)
    save(data, out)

    clashed = export_pending(store, experiment, out)

    (note,) = clashed.notes
    assert "(version 1 then, now version 3 (a draft), by bob on the judging page at" in note
    assert note.endswith(
        "this file changes c3 too: yours are kept, and `apply` refuses the run until you "
        "settle it (--force keeps yours)"
    )
    (item,) = json.loads(out.read_text())["items"]
    assert (item["scores_version"], by_id(item)["c3"]["scores"]["relevance"]) == (1, 1)
    assert [s.run_id for s in apply_judge_file(store, experiment, out).refused] == [run_id]
    forced = apply_judge_file(store, experiment, out, force=True)
    assert (forced.drafted, len(forced.forced)) == (1, 1)
    draft = json.loads(MlflowClient(sqlite_uri).get_run(run_id).data.tags["human_draft"])
    assert (draft["c1"][0], draft["c2"][0], draft["c3"][0]) == (4, 5, 1)


def test_a_file_without_versions_is_read_by_its_export_time(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """Schema version 1 (before versions): a run scored at or after `exported_at` counts
    as scored since; one never scored is written."""
    untouched_id, scored_id = record_cells(sqlite_uri, experiment)
    data = export(sqlite_uri, experiment, tmp_path / "judge.json")
    scored = next(i for i in data["items"] if i["run_id"] == scored_id)
    theirs = json.loads(json.dumps(scored))
    score(theirs["candidates"][0], relevance=5)
    page_save(sqlite_uri, experiment, theirs, "bob")
    for item in data["items"]:
        for candidate in item["candidates"]:
            score(candidate, relevance=2)
    old = {"schema_version": 1, **{k: v for k, v in data.items() if k not in (
        "schema_version", "export_id")}}  # fmt: skip
    for item in old["items"]:
        del item["scores_version"]

    result = apply_judge_file(
        TrackingStore(sqlite_uri), experiment, save(old, tmp_path / "old.json")
    )

    assert result.applied == 1 and [s.run_id for s in result.refused] == [scored_id]
    assert (
        result.refused[0]
        .describe()
        .endswith(
            f"(exported without versions, now version 1 (a draft), by bob on the judging page at "
            f"{result.refused[0].current.judged_at})"
        )
    )
    client = MlflowClient(sqlite_uri)
    assert client.get_run(untouched_id).data.metrics["relevance"] == 2
    assert client.get_run(scored_id).data.tags["judge_pending"] == "true"
