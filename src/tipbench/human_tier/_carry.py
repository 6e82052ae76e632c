"""What an export keeps of the judge file already at its path: the scores in it, carried
over candidate by candidate (merged with scores made elsewhere since), and the scores of runs
no longer pending, which must be in the store before the file is overwritten."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench._words import counted
from tipbench.human_tier._file import CandidateScores, Item, JudgeFile, where_item
from tipbench.human_tier._versions import StaleRun, changed_since, seen_scores
from tipbench.tracking import CellRun, TrackingStore


def fresh_path(out: Path) -> Path:
    """`judge.json` → the first of `judge-2.json`, `judge-3.json`, … that does not exist."""
    number = 2
    while (candidate := out.with_name(f"{out.stem}-{number}{out.suffix}")).exists():
        number += 1
    return candidate


@dataclass(frozen=True)
class Carried:
    """Candidates whose scores came over from the file there before, and what to tell."""

    candidates: int = 0
    notes: tuple[str, ...] = ()


def carry_over(
    store: TrackingStore,
    previous: JudgeFile,
    judge_file: JudgeFile,
    runs: dict[str, CellRun],
    out: Path,
    *,
    merge: bool = True,
) -> Carried:
    """Put the scores of `previous` into `judge_file`, candidate by candidate.

    For a run scored by someone else since `previous` was exported, only the file's own
    edits come over (with `merge`: the candidates where it differs from the version it
    last saw; without: every candidate it scored); where theirs changed the same candidate
    too, the file's scores are kept and the item keeps its old version, so `apply` refuses
    the run until forced (a note says so).

    Raises:
        ConfigError: such a clash in a file without versions (schema version 1), which
            `apply` could not catch; nothing is written then.
    """
    earlier = {item.run_id: item for item in previous.items}
    carried, notes = 0, []
    for index, item in enumerate(judge_file.items):
        before = earlier.get(item.run_id)
        mine = {c.id: c.scores for c in before.candidates if c.scores.started()} if before else {}
        if before is None or not mine:
            continue
        run = runs[item.run_id]
        moved = changed_since(run, before, previous)
        seen = seen_scores(store, run, before, previous) if moved and merge else None
        clashes = []
        for candidate in item.candidates:
            scores = mine.get(candidate.id)
            if scores is None or scores == candidate.scores:
                continue
            if moved is not None:
                original = seen.get(candidate.id) if seen is not None else None
                if seen is not None and _same(scores, original):
                    continue  # the file did not change it: theirs stays
                if seen is None or not _same(candidate.scores, original):
                    clashes.append(candidate.id)
            candidate.scores = scores
            carried += 1
        if clashes and moved is not None:
            stale = StaleRun(
                where_item(index, run.run_id), run.run_id, before.scores_version, moved
            )
            if before.scores_version is None:
                raise ConfigError(
                    f"{out}: {stale.describe()}, and this file changes {', '.join(clashes)} "
                    f"too; not overwritten: apply it (refused runs are named; --force keeps "
                    f"yours), or export to {fresh_path(out)}"
                )
            item.scores_version = before.scores_version
            notes.append(
                f"{stale.describe()}; this file changes {', '.join(clashes)} too: yours are "
                "kept, and `apply` refuses the run until you settle it (--force keeps yours)"
            )
    return Carried(carried, tuple(notes))


def _same(scores: CandidateScores, original: CandidateScores | None) -> bool:
    """Whether `scores` are what the file saw (nothing scored: `original` None)."""
    return scores == original if original is not None else not scores.started()


def check_left_out(
    store: TrackingStore, experiment_id: str, previous: JudgeFile, judge_file: JudgeFile, out: Path
) -> tuple[str, ...]:
    """Scores in the old file for runs no longer pending must already be in the store.

    Raises:
        ConfigError: some are not (they would be lost); names the first and a fresh path.
    """
    pending = {item.run_id for item in judge_file.items}
    left_out = [i for i in previous.items if i.run_id not in pending and _has_scores(i)]
    if not left_out:
        return ()
    runs = {run.run_id: run for run in store.cell_runs(experiment_id, judgeable=True)}
    unapplied: list[str] = []
    judged_elsewhere: list[StaleRun] = []
    gone = []
    left_ids = {item.run_id for item in left_out}
    for index, item in enumerate(previous.items):
        if item.run_id not in left_ids:
            continue
        run = runs.get(item.run_id)
        if run is None:
            gone.append(item.run_id)
            continue
        stored = run.scores("human")
        for candidate in item.candidates:
            scores = candidate.scores.complete()
            if candidate.scores.started() and (
                scores is None or stored.get(candidate.id) != scores
            ):
                unapplied.append(item.run_id)
                moved = changed_since(run, item, previous)
                if moved is not None:
                    where = where_item(index, run.run_id)
                    judged_elsewhere.append(StaleRun(where, run.run_id, item.scores_version, moved))
                break
    if judged_elsewhere:
        raise ConfigError(
            f"{out}: holds scores of {counted(len(unapplied), 'judged run')} that differ "
            f"from the stored ones, scored since this file was exported (first: "
            f"{judged_elsewhere[0].describe()}); not overwritten: apply it with --force to "
            f"keep yours, or export to {fresh_path(out)}"
        )
    if unapplied:
        raise ConfigError(
            f"{out}: holds scores of {counted(len(unapplied), 'judged run')} that differ "
            f"from the stored ones (first: run {unapplied[0]}); not overwritten: apply it "
            f"first, or export to {fresh_path(out)}"
        )
    if gone:
        runs_gone = counted(len(gone), "run")
        return (f"dropped the scores of {runs_gone} that are no longer in the experiment",)
    return ()


def _has_scores(item: Item) -> bool:
    return any(c.scores.started() for c in item.candidates)
