"""Building leaderboards from judged cell runs: one pass over the runs, then numpy.

Every scenario weighs the same in a cell's figures: the runs of one (model, prompt, scenario)
are first averaged into one scenario value, and a cell's mean is the mean of its scenario
values. The interval is over those scenario values (`mean_interval`: exact on few, bootstrap
on many); the comparison with the leader pairs the two cells' scenario values by scenario,
and ranks and standings follow from the comparisons (`compare._standing.place`). A cell
judged on fewer than `min_scenarios` scenarios is listed with its figures but not ranked.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tipbench.auto_judge import DEFAULT_MIN_KAPPA, tier_calibration
from tipbench.compare._combined import NO_AUTOMATIC_SCORES, build_combined
from tipbench.compare._leaderboard import (
    COLUMNS,
    DEFAULT_MIN_SCENARIOS,
    BoardTier,
    Leaderboard,
    LeaderboardRow,
)
from tipbench.compare._paths import model_paths
from tipbench.compare._standing import Placing, place
from tipbench.human_tier import (
    AnytimeLeader,
    anytime_leader,
    current_order,
    human_decision,
    score_floor,
)
from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    Estimate,
    Judged,
    PairedComparison,
    mean_interval,
    paired_comparison,
)
from tipbench.tracking import TIERS, CellRun, Tier, metric_name

if TYPE_CHECKING:
    from tipbench.tracking import TrackingStore

_FloatArray = npt.NDArray[np.float64]


@dataclass
class _Cell:
    """One (model, prompt) cell while the runs are read."""

    model: str
    prompt_version: str
    groups: dict[str, int] = field(default_factory=dict)  # scenario key -> value row
    n_runs: int = 0
    n_candidates: int = 0
    structured: set[str] = field(default_factory=set)  # collect's modes of its runs


@dataclass(frozen=True)
class _Scored:
    """A cell's scenario values and means, ready to rank."""

    model: str
    prompt_version: str
    per_scenario: dict[str, float]  # scenario key -> composite
    means: _FloatArray  # per column of COLUMNS
    n_runs: int
    n_candidates: int
    ranked: bool
    structured: tuple[str, ...]

    def order(self) -> tuple[bool, float, int, str, str]:
        """Ranked cells first, by mean composite, then by judged scenarios, then by name."""
        composite, scenarios = float(self.means[0]), len(self.per_scenario)
        return (not self.ranked, -composite, -scenarios, self.model, self.prompt_version)


def _candidates(run: CellRun, tier: Tier) -> int:
    """Candidates of a judged run: collect's count, else those its tier scored."""
    return run.candidate_count or len(run.scores(tier))


_Design = dict[tuple[str, str], set[str]]
"""Every cell of an experiment (judged or not) and the scenarios its runs cover."""


def _read(runs: Iterable[CellRun], tier: Tier) -> tuple[list[_Cell], _FloatArray, int, _Design]:
    """The cells of the tier's judged runs, each (cell, scenario)'s mean scores, the runs
    read and every cell with the scenarios its runs (judged or not) cover."""
    keys = [metric_name(tier, column) for column in COLUMNS]
    cells: dict[tuple[str, str], _Cell] = {}
    groups: list[int] = []
    values: list[list[float]] = []
    n_groups = 0
    every: _Design = {}
    for run in runs:
        metrics = run.metrics
        every.setdefault((run.model, run.prompt_version), set()).add(run.scenario_key)
        if keys[0] not in metrics:
            continue  # not judged by this tier
        model, prompt = run.model, run.prompt_version
        cell = cells.get((model, prompt))
        if cell is None:
            cell = cells[(model, prompt)] = _Cell(model, prompt)
        scenario = run.scenario_key
        group = cell.groups.get(scenario)
        if group is None:
            group = cell.groups[scenario] = n_groups
            n_groups += 1
        groups.append(group)
        values.append([metrics.get(key, math.nan) for key in keys])
        cell.n_runs += 1
        cell.n_candidates += _candidates(run, tier)
        cell.structured.add(run.structured)
    table = np.asarray(values, dtype=np.float64).reshape(-1, len(keys))
    scenario_values = _group_means(table, np.asarray(groups, dtype=np.intp), n_groups)
    return list(cells.values()), scenario_values, len(values), every


def _group_means(table: _FloatArray, groups: npt.NDArray[np.intp], n_groups: int) -> _FloatArray:
    """Per group, the mean of each column over its rows (missing values left out)."""
    known = ~np.isnan(table)
    sums = np.zeros((n_groups, table.shape[1]))
    counts = np.zeros((n_groups, table.shape[1]))
    np.add.at(sums, groups, np.where(known, table, 0.0))
    np.add.at(counts, groups, known)
    with np.errstate(invalid="ignore"):
        means: _FloatArray = sums / counts  # NaN where a score is missing from every run
    return means


def _score(cell: _Cell, scenario_values: _FloatArray, min_scenarios: int) -> _Scored:
    rows = list(cell.groups.values())
    with warnings.catch_warnings():  # a score missing from every scenario stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(scenario_values[rows], axis=0)
    return _Scored(
        model=cell.model,
        prompt_version=cell.prompt_version,
        per_scenario=dict(zip(cell.groups, scenario_values[rows, 0].tolist(), strict=True)),
        means=means,
        n_runs=cell.n_runs,
        n_candidates=cell.n_candidates,
        ranked=len(rows) >= min_scenarios,
        structured=tuple(sorted(cell.structured)),
    )


def build_leaderboard(
    runs: Iterable[CellRun],
    tier: Tier,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
    experiment: str = "",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Leaderboard:
    """Rank the (model, prompt) cells of `runs` by their tier's mean composite.

    Only runs that carry the tier's `composite` metric count as judged; the others are
    ignored. Figures are seeded: the same runs give the same leaderboard, in any order.

    Args:
        runs: Cell runs (e.g. the judgeable ones of `TrackingStore.cell_runs`), in any order.
        tier: Whose scores: "human" or "auto".
        min_scenarios: Judged scenarios a cell needs to be ranked (at least 1).
        experiment: Experiment name, recorded on the leaderboard.
        n_resamples: Bootstrap resamples (and permutation draws) per interval and test.
        seed: Seed of the resampling.

    Returns:
        The leaderboard; without judged runs, one with no rows.

    Raises:
        ValueError: If `min_scenarios` is below 1.
    """
    if min_scenarios < 1:
        raise ValueError(f"min_scenarios must be at least 1, got {min_scenarios}")
    cells, scenario_values, n_runs, design = _read(runs, tier)
    scored = sorted(
        (_score(cell, scenario_values, min_scenarios) for cell in cells), key=_Scored.order
    )
    ranked = [cell for cell in scored if cell.ranked]

    anytime = _anytime(scored, design) if tier == "human" and scored else None
    sequences = _leader_sequences(anytime, ranked)

    def compare(i: int, j: int) -> PairedComparison:
        vs = paired_comparison(
            ranked[i].per_scenario, ranked[j].per_scenario, CONFIDENCE, n_resamples, seed
        )
        return replace(vs, sequence=sequences.get(j) if i == 0 else None)

    def interval(cell: _Scored) -> Estimate:
        return mean_interval(list(cell.per_scenario.values()), CONFIDENCE, n_resamples, seed)

    placings = place([float(cell.means[0]) for cell in ranked], compare, ALPHA)
    rows = [
        _row(cell, placing, interval(cell)) for cell, placing in zip(ranked, placings, strict=True)
    ]
    rows.sort(key=lambda row: row.rank or 0)  # stable: by mean within a rank
    rows += [_row(cell, None, interval(cell)) for cell in scored if not cell.ranked]
    return Leaderboard(
        experiment=experiment,
        tier=tier,
        min_scenarios=min_scenarios,
        rows=tuple(rows),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        n_runs=n_runs,
        anytime=anytime,
    )


def _leader_sequences(
    anytime: AnytimeLeader | None, ranked: Sequence[_Scored]
) -> dict[int, Estimate]:
    """Per ranked cell, the sequence of its difference with the leader once the human tier's
    sequences have decided the leader: every other cell is then "behind" it (the gate's
    finding: the table never shows a cell tied with a leader the sequences have decided).
    Until then the single-look test classifies, paired by scenario."""
    if anytime is None or not anytime.decided or not ranked:
        return {}
    if anytime.leader != _name(ranked[0]):
        return {}
    found = {}
    for j, cell in enumerate(ranked[1:], start=1):
        sequence = anytime.sequences.get(_name(cell))
        if sequence is not None and math.isfinite(sequence.low) and sequence.high < 0:
            found[j] = sequence
    return found


def _name(cell: _Scored) -> str:
    return f"{cell.model}|{cell.prompt_version}"


def _anytime(scored: Sequence[_Scored], design: _Design) -> AnytimeLeader:
    """The human tier's leader by confidence sequences on its scenario values: what the
    promotion gate rests on where the combined tier does not decide. Every cell of the
    experiment takes part, human-judged or not (one without human scores has no estimate,
    so no leader is decided without it), and every scenario its runs cover makes the
    horizon."""
    values = {(one.model, one.prompt_version): one.per_scenario for one in scored}
    keys = sorted({key for covered in design.values() for key in covered})
    index = {key: i for i, key in enumerate(keys)}
    cells = sorted(design)
    cell, scenario, value = [], [], []
    for c, name in enumerate(cells):
        judged = values.get(name, {})
        for key in sorted(design[name]):
            cell.append(c)
            scenario.append(index[key])
            value.append(judged.get(key, math.nan))
    values_array = np.asarray(value, dtype=np.float64)
    judged_units = Judged.build(
        np.asarray(cell, dtype=np.intp),
        np.asarray(scenario, dtype=np.intp),
        np.full(len(values_array), np.nan),
        values_array,
        np.isfinite(values_array),
        np.zeros(len(cells), dtype=np.intp),
        score_floor("composite"),
    )
    decision, covered = human_decision(judged_units, ALPHA)
    names = [f"{model}|{prompt}" for model, prompt in cells]
    return anytime_leader(names, judged_units, decision, covered.tolist(), ALPHA)


def _row(scored: _Scored, placing: Placing | None, interval: Estimate) -> LeaderboardRow:
    means: dict[str, Any] = dict(zip(COLUMNS, scored.means.tolist(), strict=True))
    return LeaderboardRow(
        model=scored.model,
        prompt_version=scored.prompt_version,
        rank=placing.rank if placing else None,
        status="ranked" if placing else "insufficient data",
        n_scenarios=len(scored.per_scenario),
        n_runs=scored.n_runs,
        n_candidates=scored.n_candidates,
        **means,
        interval=interval,
        vs_leader=placing.vs_leader if placing else None,
        standing=placing.standing if placing else "too little data",
        rank_shared=placing.shared if placing else False,
        scenarios=scored.per_scenario,
        structured=scored.structured,
    )


def leaderboards_for(
    store: TrackingStore,
    experiment: str,
    tiers: Sequence[BoardTier] = TIERS,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
    *,
    suite: str | Path | None = None,
    min_kappa: float = DEFAULT_MIN_KAPPA,
) -> list[Leaderboard]:
    """The leaderboards of an experiment for several tiers, from one search of its runs.

    The automatic tier's leaderboard carries its judges' calibration (on the calibration
    set of `suite`, bundled by default); the combined one reads the judging order too. Asked
    for with other tiers, the combined tier is left out until the experiment has a judging
    order and automatic scores (asked for alone, its leaderboard says why it has no rows).

    Raises:
        TrackingError: If the experiment does not exist or the store cannot be read.
    """
    experiment_id = store.experiment_id(experiment)
    runs = store.cell_runs(experiment_id, judgeable=True)
    order = current_order(store, experiment_id) if "combined" in tiers else None
    boards = [
        build_combined(runs, order, min_scenarios, experiment=experiment)
        if tier == "combined"
        else build_leaderboard(runs, tier, min_scenarios=min_scenarios, experiment=experiment)
        for tier in tiers
    ]
    if len(tiers) > 1:  # among other tiers, the combined one once it can say something
        boards = [b for b in boards if b.tier != "combined" or b.rows or _started(b)]
    boards = [replace(board, paths=model_paths(runs)) for board in boards]
    boards = beside_human(boards)
    return [
        replace(board, calibration=tier_calibration(store, runs, suite, min_kappa))
        if board.tier == "auto" and board.rows
        else board
        for board in boards
    ]


def beside_human(boards: Sequence[Leaderboard]) -> list[Leaderboard]:
    """The boards shown together, the combined one naming the cells whose interval is wider
    than the human tier's beside it (issue 43: "never wider" as a user reads it; its notes
    say why). Without both tiers, unchanged."""
    human = next((board for board in boards if board.tier == "human"), None)
    if human is None:
        return list(boards)
    widths = {row.name: row.interval.high - row.interval.low for row in human.rows}

    def wider(board: Leaderboard) -> tuple[str, ...]:
        return tuple(
            row.name
            for row in board.rows
            if math.isfinite(row.interval.high - row.interval.low)
            and row.interval.high - row.interval.low > widths.get(row.name, math.inf) * (1 + 1e-9)
        )

    return [
        replace(board, wider_than_human=wider(board)) if board.tier == "combined" else board
        for board in boards
    ]


def _started(board: Leaderboard) -> bool:
    """A combined leaderboard without rows that still has news: the judging has begun."""
    judging = board.judging
    return (
        judging is not None
        and judging.order is not None
        and (judging.message != NO_AUTOMATIC_SCORES)
    )


def leaderboard_for(
    store: TrackingStore,
    experiment: str,
    tier: BoardTier,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
) -> Leaderboard:
    """The leaderboard of an experiment under one tier (one search of its cell runs).

    Raises:
        TrackingError: If the experiment does not exist or the store cannot be read.
    """
    return leaderboards_for(store, experiment, (tier,), min_scenarios)[0]
