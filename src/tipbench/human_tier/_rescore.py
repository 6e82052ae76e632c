"""A second look by a human: candidates to score again, each beside the scores it was given.

The automatic judge picks them (`auto_judge.export_disagreements`: the candidates whose
tiers differ); the file, its blind order and what it carries over are the human tier's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tipbench.human_tier._carry import Carried, carry_over
from tipbench.human_tier._export import (
    ExportResult,
    exported,
    item_numbers,
    judge_file_for,
    kept_identity,
    previous_judge_file,
)
from tipbench.human_tier._file import CandidateScores
from tipbench.tracking import CellRun, Scores, TrackingStore, fetch_candidates


@dataclass(frozen=True)
class Rescore:
    """One candidate to score again, with the scores each tier gave it."""

    run: CellRun
    candidate_id: str
    human: Scores
    auto: Scores


def export_rescores(
    store: TrackingStore,
    experiment: str,
    rescores: Sequence[Rescore],
    out: Path,
    *,
    reveal: bool = False,
    seed: int | None = None,
) -> ExportResult:
    """Write `rescores` for a human to score again, in the judge-file format.

    Each candidate carries both tiers' scores under `previous`, its scores are empty to
    re-score (flags keep the human's values), and `apply` merges them over the run's other
    human scores. Blind and shuffled unless `reveal`, like `export_pending`; scores already
    in the file at `out` are carried over.

    Raises:
        ConfigError: `out` holds scores it cannot carry over (see `previous_judge_file`
            and `carry_over`).
    """
    previous = previous_judge_file(out, experiment)
    by_run: dict[str, list[Rescore]] = {}
    for rescore in rescores:
        by_run.setdefault(rescore.run.run_id, []).append(rescore)
    runs = [of_run[0].run for of_run in by_run.values()]
    cells = fetch_candidates(store, runs)
    seed, export_id = kept_identity(previous, reveal, seed)
    numbers = item_numbers(
        experiment, store.cell_runs(store.experiment_id(experiment), judgeable=True)
    )
    judge_file = judge_file_for(
        store,
        experiment,
        runs,
        cells,
        reveal=reveal,
        seed=seed,
        export_id=export_id,
        numbers=numbers,
    )
    for item in judge_file.items:
        wanted = {r.candidate_id: r for r in by_run[item.run_id]}
        item.candidates = [c for c in item.candidates if c.id in wanted]
        for candidate in item.candidates:
            rescore = wanted[candidate.id]
            candidate.previous = {
                "human": CandidateScores.of(rescore.human),
                "auto": CandidateScores.of(rescore.auto),
            }
            candidate.scores = CandidateScores(
                format_ok=rescore.human.format_ok, overlong=rescore.human.overlong
            )
    carried = Carried()
    if previous is not None:  # its scores are re-scores: every one is the judge's own edit
        by_id = {run.run_id: run for run in runs}
        carried = carry_over(store, previous, judge_file, by_id, out, merge=False)
    judge_file.dump(out)
    return exported(out, judge_file, carried)
