"""The leaderboard of one judge tier: its rows and the JSON it is shown and served as."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tipbench.auto_judge import JudgeCalibration
from tipbench.compare._paths import ModelPaths
from tipbench.compare._standing import Standing, is_first, rank_text
from tipbench.human_tier import AnytimeLeader, JudgingStatus
from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    Estimate,
    PairedComparison,
    Verdict,
    json_number,
    verdict,
)
from tipbench.suite import SCORE_NAMES, mean_scale

Status = Literal["ranked", "insufficient data"]
BoardTier = Literal["human", "auto", "combined"]
"""Whose scores rank a leaderboard: a judge tier's, or both combined (`compare._combined`)."""
BOARD_TIERS: tuple[BoardTier, ...] = ("human", "auto", "combined")
DEFAULT_MIN_SCENARIOS = 3
COLUMNS: tuple[str, ...] = ("composite", *SCORE_NAMES)
"""The per-cell means, in the order rows and tables show them."""


def scales() -> dict[str, dict[str, Any]]:
    """What each of `COLUMNS` runs over (the rubric's `mean_scale`), as the JSON's `scale`:
    the composite 2–17, each criterion 1–5, each flag a share of candidates 0–1."""
    return {column: mean_scale(column).to_dict() for column in COLUMNS}


@dataclass(frozen=True)
class CombinedFigures:
    """What the combined tier adds to a row.

    Attributes:
        n_human: Human-scored runs its estimate uses.
        n_human_scenarios: The scenarios those runs cover: what "enough judged" counts.
        n_effective: Human-scored runs the estimate is worth: as many would give the human
            scores alone the same interval.
        lam: How much the judge's scores count in the composite (λ in [0, 1]; 0: the human
            scores alone).
        sequence: The anytime-valid confidence sequence of Δ with the leader (None for the
            leader; infinite ends while too few scores give none).
        ci_clipped: The row's t interval ran past the composite's scale and is cut at its
            end (the mean cannot leave 2–17).
    """

    n_human: int
    n_effective: float
    lam: float
    sequence: Estimate | None = None
    n_human_scenarios: int = 0
    ci_clipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_human": self.n_human,
            "n_human_scenarios": self.n_human_scenarios,
            "n_effective": json_number(self.n_effective),
            "lambda": json_number(self.lam),
            "sequence": None if self.sequence is None else self.sequence.to_dict(),
            "ci_clipped": self.ci_clipped,
        }


@dataclass(frozen=True)
class LeaderboardRow:
    """One (model, prompt) cell of a tier's leaderboard.

    Attributes:
        model: Model spec, as collect recorded it.
        prompt_version: Prompt version.
        rank: 1 for the leader and every cell that no other cell is significantly ahead of;
            below them, by mean composite (see `compare._standing`); None for a cell with
            too little judged data.
        rank_shared: Another cell has the same rank (shown `1=`).
        standing: The cell's class against the leader: "leader", "tied", "undecided",
            "behind" or "too little data" (see `Standing`); every view shows this one.
        status: "ranked", or "insufficient data" (fewer than the leaderboard's minimum of
            judged scenarios).
        n_scenarios: Judged scenarios.
        n_runs: Judged runs (more than ``n_scenarios`` if a scenario was run again).
        n_candidates: Candidates of those runs.
        composite: Mean composite, each scenario weighing the same.
        relevance: Mean relevance, and so on for each rubric score; the flags' means are the
            share of candidates with the flag set.
        interval: ``composite`` with its confidence interval (NaN ends: none) and how it
            was made: exact ("sign-flip") up to 16 scenarios, "bootstrap" above, "none" on
            too few scenarios for any, "ppi" in the combined tier.
        vs_leader: Paired comparison with the leader over the shared scenarios (this cell
            minus the leader); None for the leader and for unranked cells.
    """

    model: str
    prompt_version: str
    rank: int | None
    status: Status
    n_scenarios: int
    n_runs: int
    n_candidates: int
    composite: float
    relevance: float
    actionability: float
    tone: float
    format_ok: float
    overlong: float
    interval: Estimate
    vs_leader: PairedComparison | None
    standing: Standing
    rank_shared: bool
    scenarios: Mapping[str, float] = field(default_factory=dict, compare=False, repr=False)
    """Composite per judged scenario: what paired comparisons pair (not in `to_dict`)."""
    structured: tuple[str, ...] = ()
    """Collect's structured modes (`--structured`) of the cell's runs; one, unless the
    experiment mixes answers made differently."""
    combined: CombinedFigures | None = None
    """The combined tier's own figures (None in the human and automatic tiers)."""

    @property
    def name(self) -> str:
        """`model|prompt_version`."""
        return f"{self.model}|{self.prompt_version}"

    @property
    def ranked(self) -> bool:
        return self.rank is not None

    @property
    def rank_text(self) -> str:
        """`1`, `1=` when shared, `–` when not ranked."""
        return rank_text(self.rank, self.rank_shared)

    @property
    def first(self) -> bool:
        """First on the evidence: the leader, or tied with it (see `Standing`)."""
        return is_first(self.standing)

    @property
    def tied_with_leader(self) -> bool:
        """The standing is "tied": not different from the leader, and nobody significantly
        ahead. False for the leader itself, unranked cells, and undecided comparisons."""
        return self.standing == "tied"

    @property
    def verdict(self) -> Verdict | None:
        """The comparison with the leader's verdict; None for the leader and unranked cells."""
        return None if self.vs_leader is None else verdict(self.vs_leader, ALPHA)

    def mean(self, column: str) -> float:
        """The mean of `column` (one of `COLUMNS`)."""
        value: float = getattr(self, column)
        return value

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready values (NaN becomes None)."""
        vs = self.vs_leader
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "rank": self.rank,
            "rank_shared": self.rank_shared,
            "standing": self.standing,
            "status": self.status,
            "n_scenarios": self.n_scenarios,
            "n_runs": self.n_runs,
            "n_candidates": self.n_candidates,
            **{column: json_number(self.mean(column)) for column in COLUMNS},
            "interval": self.interval.to_dict(),
            "vs_leader": None if vs is None else vs.to_dict() | {"verdict": verdict(vs, ALPHA)},
            "tied_with_leader": self.tied_with_leader,
            "structured": list(self.structured),
            **({"combined": self.combined.to_dict()} if self.combined is not None else {}),
        }


@dataclass(frozen=True)
class Leaderboard:
    """The ranked (model, prompt) cells of one experiment under one judge tier.

    Attributes:
        experiment: Experiment name.
        tier: "human", "auto", or "combined" (both: the judge's scores on every run,
            corrected by the human's where a human scored; see `compare._combined`).
        min_scenarios: Judged scenarios a cell needs to be ranked.
        rows: Ranked rows by rank (the leader first), then the unranked ones by mean
            composite.
        generated_at: When the leaderboard was computed (ISO 8601, UTC).
        n_runs: Judged runs read.
        confidence: Confidence level of every interval.
        calibration: For the automatic tier, each judge model's calibration: whether its
            scores count as evidence, and why.
        judging: For the combined tier, how the human judging stands.
        anytime: For the human and combined tiers, the leader as the confidence sequences
            see it: what promotion rests on (valid however often one looks).
        wider_than_human: For the combined tier, the cells whose interval is wider than the
            human tier's beside it (the notes say why).
    """

    experiment: str
    tier: BoardTier
    min_scenarios: int
    rows: tuple[LeaderboardRow, ...]
    generated_at: str
    n_runs: int
    confidence: float = CONFIDENCE
    calibration: tuple[JudgeCalibration, ...] = ()
    judging: JudgingStatus | None = None
    anytime: AnytimeLeader | None = None
    paths: tuple[ModelPaths, ...] = ()  # which generation path each model's cells took
    wider_than_human: tuple[str, ...] = ()

    @property
    def leader(self) -> LeaderboardRow | None:
        """The ranked cell with the highest mean: what the others are compared with."""
        return self.rows[0] if self.rows and self.rows[0].standing == "leader" else None

    @property
    def ranked(self) -> tuple[LeaderboardRow, ...]:
        return tuple(row for row in self.rows if row.ranked)

    @property
    def first(self) -> tuple[LeaderboardRow, ...]:
        """The cells first on the evidence: the leader and those tied with it."""
        return tuple(row for row in self.rows if row.first)

    def row(self, model: str, prompt_version: str) -> LeaderboardRow:
        """The row of a (model, prompt) cell (KeyError if it was not judged in this tier)."""
        for row in self.rows:
            if row.model == model and row.prompt_version == prompt_version:
                return row
        raise KeyError(f"{model}|{prompt_version}")

    def to_dict(self) -> dict[str, Any]:
        """The leaderboard's figures as JSON-ready values (NaN and infinities as None), with
        each mean's `scale`.

        What the CLI prints and the API return is `compare.leaderboard_document`: these
        figures with the notes the table prints under it (`compare._notes`, which reads a
        leaderboard: one module cannot hold both without a circle)."""
        leader = self.leader
        return {
            "experiment": self.experiment,
            "tier": self.tier,
            "min_scenarios": self.min_scenarios,
            "confidence": self.confidence,
            "generated_at": self.generated_at,
            "n_runs": self.n_runs,
            "leader": None
            if leader is None
            else {"model": leader.model, "prompt_version": leader.prompt_version},
            "scale": scales(),
            "rows": [row.to_dict() for row in self.rows],
            **(
                {"calibration": [c.to_dict() for c in self.calibration]}
                if self.tier == "auto"
                else {}
            ),
            **({"judging": self.judging.to_dict()} if self.judging is not None else {}),
            **({"anytime": self.anytime.to_dict()} if self.anytime is not None else {}),
            **(
                {"wider_than_human": list(self.wider_than_human)} if self.tier == "combined" else {}
            ),
            "paths": [paths.to_dict() for paths in self.paths],
        }
