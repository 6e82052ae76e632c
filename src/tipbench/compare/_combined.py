"""The combined tier: one leaderboard from few human scores and many automatic ones.

Each cell's mean composite (and each criterion) is the prediction-powered estimate of
`stats._ppi`: the automatic judge's scores on every run, corrected by the human-judge
difference on the runs a human scored in the experiment's judging order (`human_tier`).
Ranks and standings follow from paired comparisons as in the other tiers
(`compare._standing.place`), here t tests of the paired difference of two estimates; each
comparison with the leader is also an anytime-valid confidence sequence
(`stats._confseq`), which says when the leader is decided.

Without a judging order the human scores' sampling is unknown: no estimate is made, and
the leaderboard says why (so does the promotion gate, which then falls back to the tiers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from tipbench.compare._leaderboard import (
    COLUMNS,
    CombinedFigures,
    Leaderboard,
    LeaderboardRow,
)
from tipbench.compare._standing import Placing, place
from tipbench.human_tier import (
    AnytimeLeader,
    CombinedState,
    JudgingOrder,
    JudgingStatus,
    anytime_leader,
    combined_state,
    judging_status,
)
from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    Estimate,
    Estimates,
    IntervalMethod,
    PairedComparison,
    half_width,
    min_attainable_p,
    scenarios_needed,
    sequence_estimate,
    sequences,
    t_p_value,
    t_quantile,
)
from tipbench.suite import mean_scale
from tipbench.tracking import CellRun

__all__ = ["NO_AUTOMATIC_SCORES", "build_combined", "combined_board", "combined_versus"]

NO_AUTOMATIC_SCORES = (
    "the automatic judge has not scored these runs: there is nothing to combine with the "
    "human scores (tipbench judge auto)"
)

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]


def _comparison(state: CombinedState, a: int, b: int) -> PairedComparison:
    """Cell b minus cell a: the single-look t test and interval the other tiers' comparisons
    mirror, and the anytime-valid confidence sequence that decides (at α / (C − 1), as the
    leader's comparisons). A variance of 0 or not a number gives no p-value; the smallest
    p counted is that of the exact test on the scenarios both cells' human scores cover."""
    e = state.estimates
    alpha = np.asarray([ALPHA / max(len(state.cells) - 1, 1)])
    needed = scenarios_needed(ALPHA)
    seq = sequences(
        state.judged,
        state.sample,
        e,
        np.asarray([a]),
        np.asarray([b]),
        alpha,
        needed,
    )
    mean, variance, df = seq.pair.mean[0], seq.pair.variance[0], seq.pair.df[0]
    usable = bool(variance > 0) and math.isfinite(variance)
    half = float(t_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, np.asarray([df]))[0])
    half = half * math.sqrt(variance) if usable else math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float(t_p_value(np.asarray([mean / math.sqrt(variance)]), np.asarray([df]))[0])
    scenarios = state.judged.scenario
    shared = np.intersect1d(scenarios[state.judged.cell == a], scenarios[state.judged.cell == b])
    # The scenarios the test can count as paired: those both cells' human scores cover.
    covered = min(int(min(e.n_human_scenarios[a], e.n_human_scenarios[b])), len(shared))
    return PairedComparison(
        n_pairs=covered,
        difference=Estimate(float(mean), float(mean - half), float(mean + half), "ppi", n=covered),
        p_value=p if usable else math.nan,
        exact=False,
        min_p_value=min_attainable_p(covered),
        sequence=sequence_estimate(mean, seq.low[0], seq.high[0], float(alpha[0]), covered),
    )


def build_combined(
    runs: Sequence[CellRun],
    order: JudgingOrder | None,
    min_scenarios: int,
    experiment: str = "",
) -> Leaderboard:
    """The combined tier's leaderboard of an experiment's judgeable runs.

    A cell is ranked when it has an estimate (a human score in its queue's prefix, or all
    its runs scored before the order) and runs on at least `min_scenarios` scenarios.
    """
    return combined_board(combined_state(runs, order), min_scenarios, experiment)


def combined_versus(
    state: CombinedState, a: tuple[str, str], b: tuple[str, str]
) -> PairedComparison | None:
    """Cell `b` minus cell `a` (each a (model, prompt)) in the combined tier, paired by
    scenario; None if either has no estimate."""
    cells = {cell: i for i, cell in enumerate(state.cells)}
    if a not in cells or b not in cells:
        return None
    i, j = cells[a], cells[b]
    e = state.estimates
    if not (np.isfinite(e.variance[i]) and np.isfinite(e.variance[j])):
        return None
    return _comparison(state, i, j)


def combined_board(state: CombinedState, min_scenarios: int, experiment: str = "") -> Leaderboard:
    """The combined tier's leaderboard from an experiment's `combined_state`."""
    order = state.order
    e = state.estimates
    columns = {name: state.column(name)[1] for name in COLUMNS[1:]}
    n_runs = int(np.count_nonzero(np.isfinite(state.judged.auto) | ~np.isnan(state.judged.human)))
    status = judging_status(state)
    if order is None:
        return _board(experiment, min_scenarios, (), n_runs, status)
    if not np.isfinite(state.judged.auto).any():  # the human tier alone says it all
        status = replace(status, message=NO_AUTOMATIC_SCORES)
        return _board(experiment, min_scenarios, (), n_runs, status)
    counts = [
        len(set(state.judged.scenario[state.judged.cell == c].tolist()))
        for c in range(len(state.cells))
    ]
    shown = np.isfinite(e.variance)
    ranked = [c for c in np.argsort(-np.where(shown, e.mean, -np.inf), kind="stable") if shown[c]]
    # Ranked on enough scenarios, and on as many human-judged ones as the other tiers ask.
    human = e.n_human_scenarios
    ranked = [c for c in ranked if min(counts[c], human[c]) >= min_scenarios]

    def compare(i: int, j: int) -> PairedComparison:
        return _comparison(state, int(ranked[i]), int(ranked[j]))

    placings = place([float(e.mean[c]) for c in ranked], compare, ALPHA)
    sequences = _sequences(state)
    rows = [
        _row(state, c, placing, columns, counts[c], sequences)
        for c, placing in zip(ranked, placings, strict=True)
    ]
    rows.sort(key=lambda row: row.rank or 0)
    rest = [c for c in range(len(state.cells)) if c not in ranked]
    rest.sort(key=lambda c: -e.mean[c] if np.isfinite(e.mean[c]) else math.inf)
    rows += [_row(state, c, None, columns, counts[c], sequences) for c in rest]
    return _board(experiment, min_scenarios, tuple(rows), n_runs, status, combined_leader(state))


def combined_leader(state: CombinedState) -> AnytimeLeader:
    """The combined tier's leader by its confidence sequences, in names and words."""
    names = [f"{model}|{prompt}" for model, prompt in state.cells]
    return anytime_leader(
        names, state.judged, state.decision, state.estimates.n_human_scenarios.tolist(), ALPHA
    )


def _board(
    experiment: str,
    min_scenarios: int,
    rows: tuple[LeaderboardRow, ...],
    n_runs: int,
    status: JudgingStatus,
    anytime: AnytimeLeader | None = None,
) -> Leaderboard:
    return Leaderboard(
        experiment=experiment,
        tier="combined",
        min_scenarios=min_scenarios,
        rows=rows,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        n_runs=n_runs,
        judging=status,
        anytime=anytime,
    )


def _sequences(state: CombinedState) -> dict[int, Estimate]:
    """Each cell's confidence sequence of Δ with the decision's leader (those ready)."""
    d = state.decision
    each = float(d.alpha[0]) if len(d.alpha) else ALPHA
    pairs = zip(d.comparisons.b, d.comparisons.mean, d.low, d.high, d.ready, strict=True)
    return {
        int(b): sequence_estimate(mean, low, high, each)
        for b, mean, low, high, ready in pairs
        if ready
    }


def _row(
    state: CombinedState,
    c: int,
    placing: Placing | None,
    columns: dict[str, Estimates],
    n_scenarios: int,
    sequences: dict[int, Estimate],
) -> LeaderboardRow:
    e = state.estimates
    model, prompt = state.cells[c]
    mine = [run for run, cell in zip(state.runs, state.judged.cell, strict=True) if cell == c]
    half = half_width(e.variance[c : c + 1], e.df[c : c + 1], CONFIDENCE)[0]
    mean = float(e.mean[c])
    scale = mean_scale("composite")
    low_end, high_end = mean - float(half), mean + float(half)
    clipped = low_end < scale.low or high_end > scale.high  # False for an interval of NaN
    # max and min keep a NaN end NaN (it comes first)
    ci_low, ci_high = max(low_end, scale.low), min(high_end, scale.high)
    method: IntervalMethod = "ppi" if math.isfinite(half) else "none"
    leader = placing is not None and placing.standing == "leader"
    criteria: dict[str, Any] = {name: float(est.mean[c]) for name, est in columns.items()}
    return LeaderboardRow(
        model=model,
        prompt_version=prompt,
        rank=placing.rank if placing else None,
        status="ranked" if placing else "insufficient data",
        n_scenarios=n_scenarios,
        n_runs=len(mine),
        n_candidates=sum(run.candidate_count for run in mine),
        composite=float(e.mean[c]),
        **criteria,
        interval=Estimate(mean, ci_low, ci_high, method, n=n_scenarios),
        vs_leader=placing.vs_leader if placing else None,
        standing=placing.standing if placing else "too little data",
        rank_shared=placing.shared if placing else False,
        structured=tuple(sorted({run.structured for run in mine})),
        combined=CombinedFigures(
            n_human=int(e.n_human[c]),
            n_human_scenarios=int(e.n_human_scenarios[c]),
            n_effective=float(e.n_effective[c]),
            lam=float(e.lam[c]),
            sequence=None if leader else sequences.get(c),
            ci_clipped=clipped,
        ),
    )
