"""The human tier, file based: apply a judge file (or the judging page's scores) back.

The whole file is checked first and every problem reported at once; then completely scored
runs get their scores, and partly scored runs keep what was scored as a draft (they stay
pending, and the next export fills the draft in). A run whose human scores changed since
the file was exported (someone else scored it meanwhile) is refused, named with who
changed it and when, unless forced; the other runs are written.
"""

from __future__ import annotations

import getpass
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tipbench._phase import PhaseResult
from tipbench.human_tier._file import (
    Candidate,
    CandidateScores,
    ItemRef,
    JudgeFile,
    JudgeFileError,
    item_refs,
    load_json,
    refs_of,
    validate_judge_file,
    where_item,
)
from tipbench.human_tier._versions import StaleRun, changed_since
from tipbench.suite import SCORE_NAMES
from tipbench.tracking import (
    DRAFT_TAG,
    SOURCE_FILE,
    CellRun,
    Draft,
    Scores,
    TrackingStore,
    clear_draft,
    record_draft,
    record_scores,
    short_error,
)

_WRITE_THREADS = 8


@dataclass(frozen=True)
class PendingRun:
    """A run of the file that is partly scored (its scores kept as a draft)."""

    item: str  # `items[3] (run …)`
    scored: int  # candidates with every score
    partly: int  # candidates with some criteria but not all
    total: int


@dataclass
class ApplyResult(PhaseResult):
    """What `apply` did with each run of the file; `failed` names the runs (by id) whose
    scores could not be written.

    Each run is counted once: applied (complete scores written), unchanged (the file holds
    the stored scores), incomplete (partly scored: kept as a draft; `drafted` of them
    written now), untouched (no score in the file: nothing written), or refused (scored
    by someone else since the file was exported; `forced` lists those written anyway).
    """

    applied: int = 0
    unchanged: int = 0
    incomplete: int = 0
    drafted: int = 0
    untouched: int = 0
    pending: list[PendingRun] = field(default_factory=list)
    refused: list[StaleRun] = field(default_factory=list)
    forced: list[StaleRun] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)  # run id -> version written now

    @property
    def exit_code(self) -> int:
        """1 when a run was refused (not written), else as every phase."""
        return super().exit_code or (1 if self.refused else 0)


def default_judge() -> str:
    return os.environ.get("TIPBENCH_JUDGE") or getpass.getuser() or "human"


def apply_judge_file(
    store: TrackingStore,
    experiment: str,
    path: Path,
    judged_by: str | None = None,
    *,
    force: bool = False,
) -> ApplyResult:
    """Validate the whole file, then write the scores of every completely scored run.

    Scores in the file are merged over the run's current human scores, so a file that
    re-scores some candidates (a disagreement queue) completes a run too. Re-applying the
    same scores writes nothing; changed scores become a new version. A partly scored run
    keeps its scores as a draft and stays pending. A run scored by someone else since the
    file was exported is refused (see `ApplyResult.refused`) unless `force`.

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
    return apply_judgements(store, experiment, judge_file, judged_by, str(path), force=force)


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
    *,
    force: bool = False,
    written_from: str | None = None,
) -> ApplyResult:
    """`apply_judge_file` for a judge file already parsed (a file, or the judging page).

    `written_from` is recorded as where the new versions came from [default: the file's
    `export_id`, else `SOURCE_FILE`].

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
        if not any(candidate.scores.started() for candidate in item.candidates):
            result.untouched += 1  # nothing scored here: a draft made elsewhere stays
            continue
        what, final, changed = _merge(run, item.candidates)
        if not changed:
            if final:
                result.unchanged += 1
            else:
                result.incomplete += 1
                result.pending.append(_pending(where_item(index, run.run_id), what, run))
            continue
        stale = changed_since(run, item, judge_file)
        if stale is not None:
            where = where_item(index, run.run_id)
            refusal = StaleRun(where, run.run_id, item.scores_version, stale)
            if not force:
                result.refused.append(refusal)
                continue
            result.forced.append(refusal)
        if not final:
            result.incomplete += 1
            result.pending.append(_pending(where_item(index, run.run_id), what, run))
        writes.append((run, what, final))

    judge = judged_by or judge_file.judge or default_judge()
    origin = written_from or judge_file.export_id or SOURCE_FILE

    def write(job: tuple[CellRun, Any, bool]) -> tuple[int, str | None]:
        run, what, final = job
        version = run.scores_version("human")
        try:
            if final:
                version = record_scores(
                    store.client,
                    run.run_id,
                    "human",
                    what,
                    judge,
                    version,
                    origin,
                    trace_id=run.trace_id,
                )
                clear_draft(store.client, run)
            else:
                version = record_draft(store.client, run.run_id, what, judge, version, origin)
        except Exception as exc:
            return version, short_error(exc)
        return version, None

    with ThreadPoolExecutor(_WRITE_THREADS) as pool:
        done = zip(writes, pool.map(write, writes), strict=True)
        for (run, _, final), (version, error) in done:
            if error is not None:
                result.failed.append((run.run_id, error))
                continue
            result.versions[run.run_id] = version
            if final:
                result.applied += 1
            else:
                result.drafted += 1
    return result


def _merge(run: CellRun, candidates: list[Candidate]) -> tuple[Any, bool, bool]:
    """What the file's candidates make of the run's human scores: `(what, final, changed)`,
    `what` being complete scores (`final`) or a draft, and whether the run holds other."""
    stored = run.scores("human")
    merged = dict(stored)
    draft = run.draft()
    for candidate in candidates:
        scores = candidate.scores.complete()
        if scores is not None:
            merged[candidate.id] = scores
        if scores is not None or candidate.scores.started():
            draft[candidate.id] = candidate.scores.values()
        else:
            draft.pop(candidate.id, None)
    if set(merged) == _known_ids(run):
        return merged, True, merged != stored
    return draft, False, draft != run.draft() or DRAFT_TAG not in run.extra_tags


def _pending(item: str, draft: Draft, run: CellRun) -> PendingRun:
    kept = [CandidateScores(**dict(zip(SCORE_NAMES, v, strict=True))) for v in draft.values()]
    scored = sum(scores.complete() is not None for scores in kept)
    partly = sum(scores.started() for scores in kept) - scored
    return PendingRun(item, scored, partly, run.candidate_count)
