"""The promotion gate: promote a prompt only when both tiers and the statistics agree."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tipbench.compare import Leaderboard, LeaderboardRow
from tipbench.human_tier import AnytimeLeader
from tipbench.promote._combined_gate import CombinedEvidence, combined_usable, decide_combined
from tipbench.promote._registry import ProductionPrompt
from tipbench.stats import (
    ALPHA,
    Condition,
    PairedComparison,
    all_passed,
    gate_fields,
    pairs_needed,
    verdict,
)
from tipbench.stats import paired_comparison as compare_pairs

DEFAULT_MARGIN_POINTS = 0.5  # composite points (2–17 scale) the winner must gain over production


@dataclass(frozen=True)
class Decision:
    """What the gate decided, why, and the evidence."""

    model: str | None
    prompt_version: str | None
    production: str | None
    conditions: tuple[Condition, ...]
    evidence: dict[str, Any] = field(default_factory=dict)
    decided_by: str = "both"
    """Which tier decided: "combined" (where both tiers have scores drawn in a judging order)
    or "both" (the two tiers must agree)."""
    why: str = ""
    """Why that tier decided (or why the combined tier could not)."""

    @property
    def promote(self) -> bool:
        return all_passed(self.conditions)

    def decided_how(self) -> str:
        """`decided by the combined tier: both tiers have scores, …`"""
        tier = "the combined tier" if self.decided_by == "combined" else "both tiers"
        return f"decided by {tier}: {self.why}" if self.why else f"decided by {tier}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the verdict and its conditions as both gates write them
        (`stats.gate_fields`), the cell, production, who decided and the evidence."""
        return {
            **gate_fields(self.conditions),
            "model": self.model,
            "prompt_version": self.prompt_version,
            "production": self.production,
            "decided_by": {"tier": self.decided_by, "why": self.why},
            "evidence": self.evidence,
        }


def _row(board: Leaderboard, model: str, prompt: str) -> LeaderboardRow | None:
    return next((r for r in board.rows if r.model == model and r.prompt_version == prompt), None)


def _vs(a: LeaderboardRow, b: LeaderboardRow) -> PairedComparison:
    """`b` minus `a`, paired by scenario."""
    return compare_pairs(a.scenarios, b.scenarios)


def decide(
    human: Leaderboard,
    auto: Leaderboard,
    production: ProductionPrompt | None,
    margin: float = DEFAULT_MARGIN_POINTS,
    alpha: float = ALPHA,
    combined: CombinedEvidence | None = None,
) -> Decision:
    """Decide whether a (model, prompt) cell should become the production prompt.

    Where both tiers have scores and the human ones were drawn in a judging order, the
    combined tier decides (`promote._combined_gate`); otherwise both tiers, as follows, and
    the decision says why the combined tier was not used.

    "First" in a tier means first on the evidence: compare's standing is "leader" or "tied"
    (no other cell is significantly ahead, and the comparison with the leader could tell);
    an "undecided" cell may or may not be behind, and a gate that cannot tell says so. Ties
    are never broken by name: the candidate is the one cell that both tiers put first. It
    is promoted only if:

    1. enough of it was judged: it is ranked in both tiers, on at least as many scenarios as
       a paired test needs to be able to reach p < `alpha` (`pairs_needed`: 6 at 0.05),
       even when nothing is in production yet;
    2. the automatic tier counts: every judge behind it is calibrated (the leaderboard's
       `calibration`); otherwise nothing confirms the human ranking;
    3. it ranks first: the human tier's anytime-valid confidence sequences (its
       `Leaderboard.anytime`) put it above every other human-judged cell, each with human
       scores on 6+ scenarios; the gate may be asked after every label, and this keeps the
       chance of ever promoting a cell that is not truly best at most `alpha`;
    4. both tiers put it first, and no other cell: when several cells are first in both
       tiers, nothing tells which one to promote;
    5. it beats production: on the same model, paired by scenario, the human tier's gain
       over the production prompt is at least `margin` and its confidence sequence
       excludes 0, and the automatic tier's gain is positive. With nothing in production
       yet, this check passes.
    """
    usable, why = combined_usable(human, auto, combined)
    if usable:
        assert combined is not None
        model, prompt, conditions, record = decide_combined(combined, production, margin, alpha)
        return Decision(
            model,
            prompt,
            production.prompt_version if production else None,
            tuple(conditions),
            record,
            decided_by="combined",
            why=why,
        )
    return replace(_decide_both(human, auto, production, margin, alpha), why=why)


def _decide_both(
    human: Leaderboard,
    auto: Leaderboard,
    production: ProductionPrompt | None,
    margin: float,
    alpha: float,
) -> Decision:
    prod = production.prompt_version if production else None
    human_first = human.first
    if not human_first:
        figure = f"no cell has {human.min_scenarios}+ human-judged scenarios"
        return Decision(None, None, prod, (Condition("enough judged", False, figure),))
    calibrated = _calibrated(auto)
    both = [row for row in human_first if _first_in(auto, row)]
    candidate = both[0] if len(both) == 1 and calibrated.passed else human_first[0]
    model, prompt = candidate.model, candidate.prompt_version
    auto_row = _row(auto, model, prompt)
    evidence: dict[str, Any] = {
        "human": candidate.to_dict(),
        "auto": auto_row and auto_row.to_dict(),
        "human_first": [row.name for row in human_first],
        "auto_first": [row.name for row in auto.first],
        "calibration": [c.to_dict() for c in auto.calibration],
    }
    if calibrated.passed:
        agree = _agree(human_first, both, auto)
    else:
        agree = Condition(
            "tiers agree",
            False,
            f"the automatic tier is not counted, so nothing confirms {_names(human_first)} "
            "(calibrate a better judge: tipbench judge calibrate --judge-model SPEC)",
        )
    conditions = [
        _enough(candidate, auto_row, auto, pairs_needed(alpha)),
        calibrated,
        _human_first(candidate, human.anytime),
        agree,
    ]
    if production is None:
        conditions.append(Condition("beats production", True, "nothing is in production yet"))
    elif prod == prompt:
        conditions.append(
            Condition("beats production", False, f"{prompt} is already in production")
        )
    else:
        beats, margins = _beats(human, auto, candidate, model, prod or "", margin, alpha)
        conditions.append(beats)
        evidence["vs_production"] = margins
    return Decision(model, prompt, prod, tuple(conditions), evidence)


def _human_first(candidate: LeaderboardRow, anytime: AnytimeLeader | None) -> Condition:
    """The human tier's confidence sequences put the candidate first, every other cell below
    it: the standing promotion rests on, valid however often the gate is asked."""
    if anytime is None or not anytime.decided or anytime.leader != candidate.name:
        why = anytime.message if anytime is not None else "no human-judged cell"
        return Condition("ranks first", False, f"the human tier's leader is not decided: {why}")
    return Condition(
        "ranks first",
        True,
        f"the human tier's confidence sequences put {candidate.name} first: every other "
        f"cell lies below it (α = {anytime.alpha:.3g} each, valid however often the gate is "
        f"asked){anytime.aside_note()}",
    )


def _first_in(board: Leaderboard, row: LeaderboardRow) -> bool:
    """The cell of `row` is first on the evidence in `board` too."""
    other = _row(board, row.model, row.prompt_version)
    return other is not None and other.first


def _names(rows: Sequence[LeaderboardRow]) -> str:
    return (
        " and ".join(row.name for row in rows)
        if len(rows) < 3
        else (", ".join(row.name for row in rows[:-1]) + f" and {rows[-1].name}")
    )


def _calibrated(auto: Leaderboard) -> Condition:
    """The automatic tier counts only if every judge behind it is calibrated."""
    if not auto.calibration:
        return Condition("judge calibrated", False, "no automatic scores: nothing to count")
    failing = [c for c in auto.calibration if not c.calibrated]
    if failing:
        return Condition(
            "judge calibrated",
            False,
            "the automatic tier is not counted: " + "; ".join(c.describe() for c in failing),
        )
    return Condition("judge calibrated", True, "; ".join(c.describe() for c in auto.calibration))


def _enough(
    leader: LeaderboardRow, auto_row: LeaderboardRow | None, auto: Leaderboard, needed: int
) -> Condition:
    """Ranked in both tiers, on as many scenarios as a paired test needs to decide."""
    found = auto_row.n_scenarios if auto_row else 0
    if auto_row is None or not auto_row.ranked:
        wanted = max(auto.min_scenarios, needed)
        return Condition(
            "enough judged",
            False,
            f"{leader.name}: {found} auto-judged scenarios, {wanted} needed",
        )
    judged = f"{leader.n_scenarios} human- and {found} auto-judged scenarios"
    if min(leader.n_scenarios, found) < needed:
        return Condition(
            "enough judged",
            False,
            f"{leader.name}: {judged}; a paired test needs {needed} to be able to tell a "
            "difference (compare's rule), for a first promotion too",
        )
    return Condition("enough judged", True, judged)


def _agree(
    human_first: Sequence[LeaderboardRow], both: Sequence[LeaderboardRow], auto: Leaderboard
) -> Condition:
    """Exactly one cell is first in both tiers."""
    if len(both) > 1:
        return Condition(
            "tiers agree",
            False,
            f"both tiers rank {_names(both)} first, tied on the evidence: the gate cannot tell "
            "which to promote (judge more scenarios to separate them)",
        )
    if len(both) == 1:
        row = both[0]
        auto_row = _row(auto, row.model, row.prompt_version)
        assert auto_row is not None
        how = _how(row, auto_row, auto)
        return Condition("tiers agree", True, f"both tiers rank {row.name} first{how}")
    return Condition("tiers agree", False, "; ".join(_not_first(row, auto) for row in human_first))


def _how(row: LeaderboardRow, auto_row: LeaderboardRow, auto: Leaderboard) -> str:
    """How a cell is first in both tiers: alone, or tied with a leader."""
    parts = []
    if row.standing == "tied":
        parts.append("the human tier ties it with its leader")
    if auto_row.standing == "tied" and auto.leader is not None:
        vs = auto_row.vs_leader
        p = f" (p = {vs.p_value:.3f})" if vs is not None else ""
        parts.append(f"the automatic tier ties it with its leader {auto.leader.name}{p}")
    return f": {'; '.join(parts)}" if parts else ""


def _not_first(row: LeaderboardRow, auto: Leaderboard) -> str:
    """Why the automatic tier does not put a human-first cell first."""
    auto_row = _row(auto, row.model, row.prompt_version)
    if auto_row is None or not auto_row.ranked:
        return f"the automatic tier does not rank {row.name}"
    leader = auto.leader
    ahead = leader.name if leader is not None else "its leader"
    vs = auto_row.vs_leader
    p = f"p = {vs.p_value:.3f}" if vs is not None else "no shared scenarios"
    if auto_row.standing == "undecided" and vs is not None:
        return (
            f"the automatic tier cannot tell whether {row.name} is behind {ahead} "
            f"({p}, smallest attainable p = {vs.min_p_value:.3g}, difference "
            f"{_interval(vs)})"
        )
    return (
        f"the automatic tier ranks {row.name} #{auto_row.rank_text}, significantly behind "
        f"{ahead if vs is not None and verdict(vs) == 'different' else 'another cell'} ({p})"
    )


def _interval(vs: PairedComparison) -> str:
    if math.isnan(vs.difference.low):
        return f"{vs.difference.value:+.2f}, too few scenarios for an interval"
    return vs.difference.text(2, signed=True)


def _beats(
    human: Leaderboard,
    auto: Leaderboard,
    leader: LeaderboardRow,
    model: str,
    production: str,
    margin: float,
    alpha: float,
) -> tuple[Condition, dict[str, Any]]:
    human_prod = _row(human, model, production)
    auto_prod = _row(auto, model, production)
    if human_prod is None or auto_prod is None or human.anytime is None:
        return Condition(
            "beats production",
            False,
            f"production prompt {production} has no judged runs on {model} in both tiers "
            "of this experiment: nothing to compare with",
        ), {}
    auto_leader = _row(auto, model, leader.prompt_version)
    gain = _vs(human_prod, leader)
    auto_gain = _vs(auto_prod, auto_leader) if auto_leader else None
    sequence = (
        human.anytime.gain_over(human_prod.name) if human.anytime.leader == leader.name else None
    )
    low, high = (sequence.low, sequence.high) if sequence is not None else (math.nan, math.nan)
    evidence = {
        "human": replace(gain, sequence=sequence).to_dict(),
        "auto": auto_gain and auto_gain.to_dict(),
    }
    single = gain.difference
    text = (
        f"human gain over {production}: {single.value:+.2f}, confidence sequence "
        f"[{low:+.2f}, {high:+.2f}] (single look: [{single.low:+.2f}, {single.high:+.2f}], "
        f"p = {gain.p_value:.3f}), {gain.n_pairs} scenarios"
    )
    if gain.n_pairs == 0 or not single.value >= margin:
        return Condition(
            "beats production", False, f"{text}; below the margin {margin:g}"
        ), evidence
    if not low > 0:
        why = "not decided" if sequence is None else "the sequence still holds 0"
        return Condition("beats production", False, f"{text}; {why}"), evidence
    if auto_gain is None or not auto_gain.difference.value > 0:
        diff = "none" if auto_gain is None else f"{auto_gain.difference.value:+.2f}"
        return Condition(
            "beats production", False, f"{text}; the auto tier disagrees ({diff})"
        ), evidence
    return Condition(
        "beats production", True, f"{text}; auto gain {auto_gain.difference.value:+.2f}"
    ), evidence
