"""Exporting pending runs to a judge file: blind, shuffled, and never destroying scores.

An export records per run the version of its human scores, so that `apply` can tell
whether someone else scored it since. An export onto an existing judge file carries the
scores already in it over (the file is the judge's work in progress; it keeps its
`export_id`); where someone else scored a run since, the file's own edits are merged with
theirs candidate by candidate, and where both changed the same candidate the file's are
kept and the run keeps its old version, so that `apply` refuses it until it is settled.
A file that cannot be read, or that holds scores the store does not have, is never
overwritten: the export refuses and names a fresh path.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench.human_tier._carry import Carried, carry_over, check_left_out, fresh_path
from tipbench.human_tier._file import (
    Candidate,
    CandidateScores,
    Item,
    JudgeFile,
    RubricRef,
    load_json,
    validate_judge_file,
)
from tipbench.human_tier._mlflow_feedback import feedback_drafts
from tipbench.suite import SCORE_NAMES, content_hash, load_suite
from tipbench.tracking import CellCandidates, CellRun, TrackingStore, fetch_candidates, fetch_rubric


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: runs and candidates, and how many of them already hold scores."""

    path: Path
    runs: int
    candidates: int
    scored: int = 0  # candidates with every score (drafts, or carried over from the file)
    partly: int = 0  # candidates with some criteria but not all
    carried: int = 0  # candidates whose scores came from the file that was there before
    notes: tuple[str, ...] = field(default_factory=tuple)


def new_export_id() -> str:
    """A fresh name for an export (see `JudgeFile.export_id`)."""
    return secrets.token_hex(8)


def kept_identity(
    previous: JudgeFile | None, reveal: bool, seed: int | None
) -> tuple[int | None, str]:
    """The blind order's seed (None with `reveal`) and the export id of a file written over
    `previous`: the seed asked for, else both kept from `previous` (a re-export is the same
    file), else new ones."""
    if not reveal and seed is None:
        seed = previous.order_seed if previous else None
        seed = seed if seed is not None else secrets.randbelow(2**31)
    export_id = previous.export_id if previous and previous.export_id else new_export_id()
    return (None if reveal else seed), export_id


def blind_order(seed: int, key: str) -> str:
    """A sort key that shuffles by `seed` and keeps the order when other items come or go."""
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def experiment_seed(experiment: str) -> int:
    """The seed of an experiment's blind item numbers (and of its judging page's candidate
    order): the same on every request and in every export."""
    return int(content_hash(["judging page", experiment])[:8], 16)


def item_numbers(experiment: str, runs: Iterable[CellRun]) -> dict[str, int]:
    """Each judgeable run's item number (1, 2, …), by run id: the one numbering the judge
    file (`"item"`) and the judging page ("Item 4 of 9") share. Blind (a seeded shuffle of
    the run ids, which say nothing of the model or prompt) and the same whichever runs are
    still pending; a run collected later takes its place among them."""
    seed = experiment_seed(experiment)
    ordered = sorted((run.run_id for run in runs), key=lambda run_id: blind_order(seed, run_id))
    return {run_id: number for number, run_id in enumerate(ordered, start=1)}


def judge_file_for(
    store: TrackingStore,
    experiment: str,
    runs: list[CellRun],
    cells: list[CellCandidates],
    *,
    reveal: bool = True,
    seed: int | None = None,
    export_id: str | None = None,
    order: Sequence[str] = (),
    inclusion: Mapping[str, float] | None = None,
    numbers: Mapping[str, int] | None = None,
) -> JudgeFile:
    """A judge file over `cells`: flags pre-filled by the rubric's rules, drafts filled in,
    each run's current version of its human scores and its item number (`numbers`, from
    `item_numbers`).

    Blind unless `reveal`: no model or prompt version, and with `seed` the items and the
    candidates within them in a shuffled order; the runs listed in `order` (the judging
    order, `compare.serving_order`) come first, in that order, each with its `inclusion`
    probability. The rubric is the one stored with the runs (the bundled one if there are
    none).
    """
    if runs:
        rubric_id, rubric_text = fetch_rubric(store, runs[0])
    else:
        rubric = load_suite().rubric
        rubric_id, rubric_text = rubric.id, rubric.text()
    drafts = feedback_drafts(store, runs)  # with scores given in MLflow's trace view
    versions = {run.run_id: run.scores_version("human") for run in runs}
    items = []
    for cell in cells:
        draft = drafts.get(cell.run_id, {})
        candidates = [
            Candidate(
                id=c.id,
                text=c.text,
                scores=_draft_scores(draft.get(c.id))
                or CandidateScores(format_ok=c.format_ok, overlong=c.overlong),
            )
            for c in cell.candidates
        ]
        if seed is not None:
            candidates.sort(key=lambda c: blind_order(seed, f"{cell.run_id}/{c.id}"))
        items.append(
            Item(
                run_id=cell.run_id,
                scores_version=versions.get(cell.run_id, 0),
                model=cell.model if reveal else None,
                prompt_version=cell.prompt_version if reveal else None,
                scenario=cell.scenario,
                candidates=candidates,
                inclusion=(inclusion or {}).get(cell.run_id),
                item=(numbers or {}).get(cell.run_id),
            )
        )
    if seed is not None:
        place = {run_id: i for i, run_id in enumerate(order)}
        items.sort(
            key=lambda item: (place.get(item.run_id, len(place)), blind_order(seed, item.run_id))
        )
    return JudgeFile(
        experiment=experiment,
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        export_id=export_id,
        order_seed=seed,
        rubric=RubricRef.of(rubric_id, rubric_text),
        items=items,
    )


def _draft_scores(values: list[int | None] | None) -> CandidateScores | None:
    return CandidateScores(**dict(zip(SCORE_NAMES, values, strict=True))) if values else None


def previous_judge_file(out: Path, experiment: str) -> JudgeFile | None:
    """The judge file already at `out`, whose scores an export there carries over.

    Raises:
        ConfigError: `out` holds something that is not a judge file of `experiment` with
            scores (broken JSON, another format, another experiment's scores): it is never
            overwritten; the message names a fresh path.
    """
    if not out.exists():
        return None
    fresh = fresh_path(out)
    try:
        raw = load_json(out)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; not overwritten: fix it, or export to {fresh}") from None
    judge_file, problems = validate_judge_file(raw)
    if judge_file is None or problems:
        raise ConfigError(
            f"{out}: not a valid judge file ({problems[0]}); not overwritten: fix it, "
            f"or export to {fresh}"
        )
    if judge_file.experiment != experiment and judge_file.started_candidates():
        raise ConfigError(
            f"{out}: holds scores for experiment {judge_file.experiment!r}; not overwritten: "
            f"export to {fresh}"
        )
    return judge_file if judge_file.experiment == experiment else None


def export_pending(
    store: TrackingStore,
    experiment: str,
    out: Path,
    *,
    reveal: bool = False,
    seed: int | None = None,
    order: Sequence[str] = (),
    inclusion: Mapping[str, float] | None = None,
) -> ExportResult:
    """Write every run of `experiment` still waiting for the human judge into one file.

    Args:
        store: The MLflow store the experiment lives in.
        experiment: The experiment's name.
        out: The judge file; scores already in it are carried over.
        reveal: Show each run's model and prompt version, in run-name order (not blind).
        seed: The seed of the blind order [default: the file's, else a random one].
        order: Run ids in the judging order (`compare.serving_order`): they come first.
        inclusion: Each run's inclusion probability in that order (`compare.inclusion_at_turn`).

    Raises:
        ConfigError: `out` cannot be overwritten without losing scores (see
            `previous_judge_file`, and scores of runs no longer pending that differ from
            the stored ones); nothing is written then.
    """
    previous = previous_judge_file(out, experiment)
    experiment_id = store.experiment_id(experiment)
    judgeable = store.cell_runs(experiment_id, judgeable=True)
    runs = sorted((run for run in judgeable if run.judge_pending), key=lambda r: r.name)
    cells = fetch_candidates(store, runs)
    seed, export_id = kept_identity(previous, reveal, seed)
    judge_file = judge_file_for(
        store,
        experiment,
        runs,
        cells,
        reveal=reveal,
        seed=seed,
        export_id=export_id,
        order=order,
        inclusion=inclusion,
        numbers=item_numbers(experiment, judgeable),
    )
    carried = Carried()
    notes: tuple[str, ...] = ()
    if previous is not None:
        carried = carry_over(store, previous, judge_file, {run.run_id: run for run in runs}, out)
        notes = check_left_out(store, experiment_id, previous, judge_file, out)
    judge_file.dump(out)
    return exported(out, judge_file, carried, notes)


def exported(
    out: Path, judge_file: JudgeFile, carried: Carried, notes: tuple[str, ...] = ()
) -> ExportResult:
    """What was written to `out`: counts, and the notes of the carry-over and the export."""
    scored = judge_file.scored_candidates()
    return ExportResult(
        out,
        len(judge_file.items),
        sum(len(item.candidates) for item in judge_file.items),
        scored=scored,
        partly=judge_file.started_candidates() - scored,
        carried=carried.candidates,
        notes=carried.notes + notes,
    )
