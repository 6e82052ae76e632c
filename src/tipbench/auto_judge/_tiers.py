"""The two tiers side by side: agreement per criterion, and the disagreement queue."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipbench.auto_judge._agreement import Agreement, agreement
from tipbench.auto_judge._agreement_notes import tier_notes
from tipbench.human_tier import ExportResult, Rescore, export_rescores
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
    """Write the candidates whose tiers differ by more than `delta` for a human re-score
    (`human_tier.export_rescores`: both tiers' scores under `previous`, the scores empty).

    Raises:
        ConfigError: `out` holds scores it cannot carry over (see
            `human_tier.export_rescores`).
    """
    pairs = [p for p in scored_pairs(store, experiment) if p.difference() > delta]
    rescores = [Rescore(p.run, p.candidate_id, p.human, p.auto) for p in pairs]
    return export_rescores(store, experiment, rescores, out, reveal=reveal, seed=seed)
