"""The human tier, file based: export pending runs to a judge file, apply it back."""

from __future__ import annotations

import getpass
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tipbench._errors import ConfigError
from tipbench.judge._candidates import (
    CellCandidates,
    candidate_count,
    fetch_candidates,
    fetch_rubric,
    judgeable_runs,
)
from tipbench.judge._file import (
    Candidate,
    CandidateScores,
    Item,
    JudgeFile,
    RubricRef,
    read_judge_file,
)
from tipbench.judge._record import record_scores
from tipbench.judge._scores import Scores, decode_scores, scores_tag, version_tag
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore, short_error

if TYPE_CHECKING:
    from mlflow.entities import Run

_WRITE_THREADS = 8


@dataclass(frozen=True)
class ExportResult:
    path: Path
    runs: int
    candidates: int


@dataclass
class ApplyResult:
    """What `apply` did: runs written, already up to date, and not yet completely scored."""

    applied: int = 0
    unchanged: int = 0
    incomplete: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (run id, error)


def judge_file_for(
    store: TrackingStore, experiment: str, runs: list[Run], cells: list[CellCandidates]
) -> JudgeFile:
    """A judge file over `cells`: scores null, flags pre-filled by the rubric's rules.

    The rubric text is the one stored with the runs (the bundled one if there are none).
    """
    if runs:
        rubric_id, rubric_text = fetch_rubric(store, runs[0])
    else:
        rubric = load_suite().rubric
        rubric_id, rubric_text = rubric.id, rubric.text()
    return JudgeFile(
        experiment=experiment,
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        rubric=RubricRef(id=rubric_id, text=rubric_text),
        items=[
            Item(
                run_id=cell.run_id,
                model=cell.model,
                prompt_version=cell.prompt_version,
                scenario=cell.scenario,
                candidates=[
                    Candidate(
                        id=c["id"],
                        text=c["text"],
                        scores=CandidateScores(format_ok=c["format_ok"], overlong=c["overlong"]),
                    )
                    for c in cell.candidates
                ],
            )
            for cell in cells
        ],
    )


def export_pending(store: TrackingStore, experiment: str, out: Path) -> ExportResult:
    """Write every run of `experiment` still waiting for the human judge into one file."""
    experiment_id = store.experiment_id(experiment)
    runs = judgeable_runs(store, experiment_id, "tags.judge_pending = 'true'")
    runs.sort(key=lambda r: r.info.run_name or "")
    cells = fetch_candidates(store, runs)
    judge_file = judge_file_for(store, experiment, runs, cells)
    judge_file.dump(out)
    return ExportResult(out, len(cells), sum(len(c.candidates) for c in cells))


def default_judge() -> str:
    return os.environ.get("TIPBENCH_JUDGE") or getpass.getuser() or "human"


def apply_judge_file(
    store: TrackingStore, experiment: str, path: Path, judged_by: str | None = None
) -> ApplyResult:
    """Validate the whole file, then write the scores of every completely scored run.

    Scores in the file are merged over the run's current human scores, so a file that
    re-scores some candidates (a disagreement queue) completes a run too. Re-applying the
    same scores writes nothing; changed scores become a new version.

    Raises:
        ConfigError: naming the item and the problem; nothing is written then.
    """
    return apply_judgements(store, experiment, read_judge_file(path), judged_by, str(path))


def apply_judgements(
    store: TrackingStore,
    experiment: str,
    judge_file: JudgeFile,
    judged_by: str | None = None,
    source: str = "judge file",
) -> ApplyResult:
    """`apply_judge_file` for a judge file already parsed (a file, or the judging page).

    Raises:
        ConfigError: naming `source`, the item and the problem; nothing is written then.
    """
    if judge_file.experiment != experiment:
        raise ConfigError(
            f"{source}: exported from experiment {judge_file.experiment!r}, not {experiment!r}"
        )
    experiment_id = store.experiment_id(experiment)
    runs = {run.info.run_id: run for run in judgeable_runs(store, experiment_id)}
    plan = [
        _planned(source, experiment, index, item, runs)
        for index, item in enumerate(judge_file.items)
    ]

    result = ApplyResult()
    writes: list[tuple[Run, dict[str, Scores]]] = []
    for run, merged, complete in plan:
        if not complete:
            result.incomplete += 1
        elif merged == decode_scores(run.data.tags.get(scores_tag("human"))):
            result.unchanged += 1
        else:
            writes.append((run, merged))

    judge = judged_by or judge_file.judge or default_judge()

    def write(job: tuple[Run, dict[str, Scores]]) -> str | None:
        run, scores = job
        try:
            previous = int(run.data.tags.get(version_tag("human"), "0"))
            record_scores(store.client, run.info.run_id, "human", scores, judge, previous)
        except Exception as exc:
            return short_error(exc)
        return None

    with ThreadPoolExecutor(_WRITE_THREADS) as pool:
        for (run, _), error in zip(writes, pool.map(write, writes), strict=True):
            if error is None:
                result.applied += 1
            else:
                result.failed.append((run.info.run_id, error))
    return result


def _planned(
    source: str, experiment: str, index: int, item: Item, runs: dict[str, Run]
) -> tuple[Run, dict[str, Scores], bool]:
    """Check one item against its run; return the run, merged scores and completeness."""
    where = f"{source}: items[{index}] (run {item.run_id})"
    run = runs.get(item.run_id)
    if run is None:
        raise ConfigError(f"{where}: not a judgeable cell run of experiment {experiment!r}")
    known = {f"c{i}" for i in range(1, candidate_count(run) + 1)}
    merged = decode_scores(run.data.tags.get(scores_tag("human")))
    for candidate in item.candidates:
        if candidate.id not in known:
            raise ConfigError(f"{where}: unknown candidate id {candidate.id!r}")
        scores = candidate.scores.complete()
        if scores is not None:
            merged[candidate.id] = scores
    return run, merged, set(merged) == known
