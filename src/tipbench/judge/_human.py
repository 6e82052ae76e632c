"""The human tier, file based: apply a judge file (or the judging page's scores) back.

The whole file is checked first and every problem reported at once; then completely scored
runs get their scores, and partly scored runs keep what was scored as a draft (they stay
pending, and the next export fills the draft in).
"""

from __future__ import annotations

import getpass
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tipbench._phase import PhaseResult
from tipbench.judge._file import (
    ItemRef,
    JudgeFile,
    JudgeFileError,
    item_refs,
    load_json,
    refs_of,
    validate_judge_file,
    where_item,
)
from tipbench.judge._record import record_scores
from tipbench.tracking import (
    DRAFT_TAG,
    CellRun,
    Draft,
    Scores,
    TrackingStore,
    encode_draft,
    short_error,
)

_WRITE_THREADS = 8


@dataclass(frozen=True)
class PendingRun:
    """A run of the file that is not completely scored yet (its scores kept as a draft)."""

    item: str  # `items[3] (run …)`
    scored: int
    total: int


@dataclass
class ApplyResult(PhaseResult):
    """What `apply` did: runs written, already up to date, and not yet completely scored.

    `failed` names the runs (by id) whose scores could not be written.
    """

    applied: int = 0
    unchanged: int = 0
    incomplete: int = 0
    drafted: int = 0  # incomplete runs whose draft was written now
    pending: list[PendingRun] = field(default_factory=list)


def default_judge() -> str:
    return os.environ.get("TIPBENCH_JUDGE") or getpass.getuser() or "human"


def apply_judge_file(
    store: TrackingStore, experiment: str, path: Path, judged_by: str | None = None
) -> ApplyResult:
    """Validate the whole file, then write the scores of every completely scored run.

    Scores in the file are merged over the run's current human scores, so a file that
    re-scores some candidates (a disagreement queue) completes a run too. Re-applying the
    same scores writes nothing; changed scores become a new version. A partly scored run
    keeps its scores as a draft and stays pending.

    Raises:
        ConfigError: the file is not readable JSON (one line, naming where).
        JudgeFileError: every problem of the file, one line each; nothing is written then.
    """
    raw = load_json(path)
    judge_file, problems = validate_judge_file(raw)
    if judge_file is None or problems:
        runs = _runs(store, experiment)
        refs = item_refs(raw)
        problems += _store_problems(experiment, refs, runs) if runs is not None else []
        raise JudgeFileError(str(path), problems)
    return apply_judgements(store, experiment, judge_file, judged_by, str(path))


def _runs(store: TrackingStore, experiment: str) -> dict[str, CellRun] | None:
    """The judgeable runs by id (None if the experiment does not exist)."""
    try:
        experiment_id = store.experiment_id(experiment)
    except Exception:
        return None
    return {run.run_id: run for run in store.cell_runs(experiment_id, judgeable=True)}


def _store_problems(experiment: str, refs: list[ItemRef], runs: dict[str, CellRun]) -> list[str]:
    problems = []
    for index, run_id, ids in refs:
        run = runs.get(run_id)
        if run is None:
            problems.append(
                f"{where_item(index, run_id)}: not a judgeable cell run of experiment "
                f"{experiment!r}"
            )
            continue
        known = _known_ids(run)
        for cid in ids:
            if cid not in known:
                problems.append(f"{where_item(index, run_id)}: unknown candidate id {cid!r}")
    return problems


def _known_ids(run: CellRun) -> set[str]:
    return {f"c{i}" for i in range(1, run.candidate_count + 1)}


def apply_judgements(
    store: TrackingStore,
    experiment: str,
    judge_file: JudgeFile,
    judged_by: str | None = None,
    source: str = "judge file",
) -> ApplyResult:
    """`apply_judge_file` for a judge file already parsed (a file, or the judging page).

    Raises:
        JudgeFileError: naming `source` and every problem; nothing is written then.
    """
    if judge_file.experiment != experiment:
        raise JudgeFileError(
            source, [f"exported from experiment {judge_file.experiment!r}, not {experiment!r}"]
        )
    runs = _runs(store, experiment) or {}
    if not runs:
        store.experiment_id(experiment)  # a missing experiment is a TrackingError
    problems = _store_problems(experiment, refs_of(judge_file), runs)
    if problems:
        raise JudgeFileError(source, problems)

    result = ApplyResult()
    writes: list[tuple[CellRun, dict[str, Scores] | Draft, bool]] = []  # (run, what, final)
    for index, item in enumerate(judge_file.items):
        run = runs[item.run_id]
        known = _known_ids(run)
        stored = run.scores("human")
        merged = dict(stored)
        draft = run.draft()
        for candidate in item.candidates:
            scores = candidate.scores.complete()
            if scores is not None:
                merged[candidate.id] = scores
            if scores is not None or candidate.scores.started():
                draft[candidate.id] = candidate.scores.values()
            else:
                draft.pop(candidate.id, None)
        if set(merged) == known:
            if merged == stored and DRAFT_TAG not in run.extra_tags:
                result.unchanged += 1
            else:
                writes.append((run, merged, True))
            continue
        result.incomplete += 1
        scored = sum(1 for values in draft.values() if None not in values)
        result.pending.append(PendingRun(where_item(index, item.run_id), scored, len(known)))
        if draft != run.draft():
            writes.append((run, draft, False))

    judge = judged_by or judge_file.judge or default_judge()

    def write(job: tuple[CellRun, Any, bool]) -> str | None:
        run, what, final = job
        run_id = run.run_id
        try:
            if not final:
                store.client.set_tag(run_id, DRAFT_TAG, encode_draft(what))
                return None
            if what != run.scores("human"):
                previous = run.scores_version("human")
                record_scores(store.client, run_id, "human", what, judge, previous)
            if DRAFT_TAG in run.extra_tags:
                store.client.delete_tag(run_id, DRAFT_TAG)
        except Exception as exc:
            return short_error(exc)
        return None

    with ThreadPoolExecutor(_WRITE_THREADS) as pool:
        for (run, _, final), error in zip(writes, pool.map(write, writes), strict=True):
            if error is not None:
                result.failed.append((run.run_id, error))
            elif final:
                result.applied += 1
            else:
                result.drafted += 1
    return result
