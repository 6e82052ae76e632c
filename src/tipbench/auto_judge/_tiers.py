"""The two tiers side by side: agreement per criterion, and the disagreement queue."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipbench.judge._agreement import Agreement, agreement
from tipbench.judge._agreement_notes import tier_notes
from tipbench.judge._candidates import fetch_candidates
from tipbench.judge._carry import Carried, carry_over
from tipbench.judge._export import (
    ExportResult,
    exported,
    item_numbers,
    judge_file_for,
    kept_identity,
    previous_judge_file,
)
from tipbench.judge._file import CandidateScores
from tipbench.suite import SCORE_NAMES, levels
from tipbench.tracking import CellRun, Scores, TrackingStore


@dataclass(frozen=True)
class ScoredPair:
    """One candidate scored by both tiers."""

    run: CellRun
    candidate_id: str
    human: Scores
    auto: Scores

    def difference(self) -> int:
        """The largest absolute difference over the criteria and flags."""
        h, a = self.human.as_dict(), self.auto.as_dict()
        return max(abs(h[name] - a[name]) for name in SCORE_NAMES)


def scored_pairs(store: TrackingStore, experiment: str) -> list[ScoredPair]:
    """Every candidate of the experiment that both tiers have scored (one search)."""
    experiment_id = store.experiment_id(experiment)
    pairs = []
    for run in store.cell_runs(experiment_id, judgeable=True):
        human, auto = run.scores("human"), run.scores("auto")
        pairs += [ScoredPair(run, cid, human[cid], auto[cid]) for cid in human if cid in auto]
    return pairs


def tier_agreement(pairs: list[ScoredPair]) -> dict[str, Agreement]:
    """Per criterion (1–5) and flag (0/1): κ, α, exact and within-1 agreement, with counts."""
    result = {}
    for name in SCORE_NAMES:
        labels = levels(name)
        human = [getattr(p.human, name) for p in pairs]
        auto = [getattr(p.auto, name) for p in pairs]
        result[name] = agreement(human, auto, labels)
    return result


def agreement_notes(pairs: list[ScoredPair], figures: dict[str, Agreement]) -> list[str]:
    """What the figures of `tier_agreement` cannot say on their own: a criterion where a
    tier gave every candidate the same score (κ is then 0, whatever the exact agreement),
    and the flags, which both tiers take from the rules (see `_agreement_notes`)."""
    human = {name: [getattr(p.human, name) for p in pairs] for name in SCORE_NAMES}
    auto = {name: [getattr(p.auto, name) for p in pairs] for name in SCORE_NAMES}
    return tier_notes(figures, human, auto)


def export_disagreements(
    store: TrackingStore,
    experiment: str,
    delta: float,
    out: Path,
    *,
    reveal: bool = False,
    seed: int | None = None,
) -> ExportResult:
    """Write the candidates whose tiers differ by more than `delta` for a human re-score.

    The file has the judge-file format; each candidate carries both tiers' scores under
    `previous`, its scores are empty to re-score (flags keep the human's values), and
    `apply` merges them over the run's other human scores. Blind and shuffled unless
    `reveal`, like `export_pending`; scores already in the file at `out` are carried over.

    Raises:
        ConfigError: `out` holds scores it cannot carry over (see `previous_judge_file`
            and `carry_over`).
    """
    previous = previous_judge_file(out, experiment)
    pairs = [p for p in scored_pairs(store, experiment) if p.difference() > delta]
    by_run: dict[str, list[ScoredPair]] = {}
    for pair in pairs:
        by_run.setdefault(pair.run.run_id, []).append(pair)
    runs = [pairs_of[0].run for pairs_of in by_run.values()]
    cells = fetch_candidates(store, runs)
    seed, export_id = kept_identity(previous, reveal, seed)
    numbers = item_numbers(
        experiment, store.cell_runs(store.experiment_id(experiment), judgeable=True)
    )
    judge_file = judge_file_for(
        store, experiment, runs, cells, reveal=reveal, seed=seed, export_id=export_id,
        numbers=numbers,
    )  # fmt: skip
    for item in judge_file.items:
        wanted = {p.candidate_id: p for p in by_run[item.run_id]}
        item.candidates = [c for c in item.candidates if c.id in wanted]
        for candidate in item.candidates:
            pair = wanted[candidate.id]
            candidate.previous = {
                "human": CandidateScores.of(pair.human),
                "auto": CandidateScores.of(pair.auto),
            }
            candidate.scores = CandidateScores(
                format_ok=pair.human.format_ok, overlong=pair.human.overlong
            )
    carried = Carried()
    if previous is not None:  # its scores are re-scores: every one is the judge's own edit
        by_id = {run.run_id: run for run in runs}
        carried = carry_over(store, previous, judge_file, by_id, out, merge=False)
    judge_file.dump(out)
    return exported(out, judge_file, carried)
