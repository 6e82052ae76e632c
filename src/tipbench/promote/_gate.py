"""The promotion gate: promote a prompt only when both tiers and the statistics agree."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tipbench.compare import ALPHA, Leaderboard, LeaderboardRow, PairedComparison
from tipbench.compare import paired_comparison as compare_pairs
from tipbench.promote._registry import ProductionPrompt

DEFAULT_MARGIN = 0.5  # composite points (2–17 scale) the winner must gain over production


@dataclass(frozen=True)
class Check:
    """One condition of the gate, with what it found."""

    name: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class Decision:
    """What the gate decided, why, and the evidence."""

    model: str | None
    prompt_version: str | None
    production: str | None
    checks: tuple[Check, ...]
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def promote(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "promote": self.promote,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "production": self.production,
            "checks": [vars(check) for check in self.checks],
            "evidence": self.evidence,
        }


def _row(board: Leaderboard, model: str, prompt: str) -> LeaderboardRow | None:
    return next((r for r in board.rows if r.model == model and r.prompt_version == prompt), None)


def _vs(a: LeaderboardRow, b: LeaderboardRow) -> PairedComparison:
    """`b` minus `a`, paired by scenario."""
    return compare_pairs(a.scenarios, b.scenarios)


def _comparison(c: PairedComparison) -> dict[str, Any]:
    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "n_pairs": c.n_pairs,
        "diff": number(c.mean_diff),
        "ci_low": number(c.ci_low),
        "ci_high": number(c.ci_high),
        "p_value": number(c.p_value),
    }


def decide(
    human: Leaderboard,
    auto: Leaderboard,
    production: ProductionPrompt | None,
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
) -> Decision:
    """Decide whether the human tier's leader should become the production prompt.

    The candidate is the human leader (model, prompt). It is promoted only if:
    1. enough of it was judged: it is ranked (≥ min_scenarios) in both tiers;
    2. the automatic tier counts: every judge behind it is calibrated (the leaderboard's
       `calibration`); otherwise nothing confirms the human ranking;
    3. both tiers put it first: the automatic tier ranks it first, or not different from
       its leader (the paired test and interval agree on it: an inconclusive comparison,
       e.g. on too few scenarios, does not count);
    4. it beats production: on the same model, paired by scenario, the human tier's gain
       over the production prompt is at least `margin` with p < `alpha`, and the automatic
       tier's gain is positive. With nothing in production yet, this check passes.
    """
    leader = next((r for r in human.rows if r.rank == 1), None)
    prod = production.prompt_version if production else None
    if leader is None:
        reason = f"no cell has {human.min_scenarios}+ human-judged scenarios"
        return Decision(None, None, prod, (Check("enough judged", False, reason),))
    model, prompt = leader.model, leader.prompt_version
    auto_row = _row(auto, model, prompt)
    evidence: dict[str, Any] = {"human": leader.to_dict(), "auto": auto_row and auto_row.to_dict()}
    calibrated = _calibrated(auto)
    evidence["calibration"] = [c.to_dict() for c in auto.calibration]
    agree = (
        _agree(leader, auto_row, auto)
        if calibrated.passed
        else Check(
            "tiers agree",
            False,
            f"the automatic tier is not counted, so nothing confirms {leader.name} "
            "(calibrate a better judge: tipbench judge calibrate --judge-model SPEC)",
        )
    )
    checks = [_enough(leader, auto_row, auto), calibrated, agree]
    if production is None:
        checks.append(Check("beats production", True, "nothing is in production yet"))
    elif prod == prompt:
        checks.append(Check("beats production", False, f"{prompt} is already in production"))
    else:
        check, margins = _beats(human, auto, leader, model, prod or "", margin, alpha)
        checks.append(check)
        evidence["vs_production"] = margins
    return Decision(model, prompt, prod, tuple(checks), evidence)


def _calibrated(auto: Leaderboard) -> Check:
    """The automatic tier counts only if every judge behind it is calibrated."""
    if not auto.calibration:
        return Check("judge calibrated", False, "no automatic scores: nothing to count")
    failing = [c for c in auto.calibration if not c.calibrated]
    if failing:
        return Check(
            "judge calibrated",
            False,
            "the automatic tier is not counted: " + "; ".join(c.describe() for c in failing),
        )
    return Check("judge calibrated", True, "; ".join(c.describe() for c in auto.calibration))


def _enough(leader: LeaderboardRow, auto_row: LeaderboardRow | None, auto: Leaderboard) -> Check:
    if auto_row is None or not auto_row.ranked:
        found = auto_row.n_scenarios if auto_row else 0
        return Check(
            "enough judged",
            False,
            f"{leader.name}: {found} auto-judged scenarios, {auto.min_scenarios} needed",
        )
    return Check(
        "enough judged",
        True,
        f"{leader.n_scenarios} human- and {auto_row.n_scenarios} auto-judged scenarios",
    )


def _agree(leader: LeaderboardRow, auto_row: LeaderboardRow | None, auto: Leaderboard) -> Check:
    if auto_row is None or not auto_row.ranked:
        return Check("tiers agree", False, f"the automatic tier does not rank {leader.name}")
    if auto_row.rank == 1:
        return Check("tiers agree", True, f"both tiers rank {leader.name} first")
    auto_leader = next(r for r in auto.rows if r.rank == 1)
    vs = auto_row.vs_leader
    p = f"p = {vs.p_value:.3f}" if vs is not None else "no shared scenarios"
    if auto_row.tied_with_leader:
        return Check(
            "tiers agree",
            True,
            f"the automatic tier ties {leader.name} with its leader {auto_leader.name} ({p})",
        )
    if auto_row.verdict == "inconclusive" and vs is not None:
        return Check(
            "tiers agree",
            False,
            f"the automatic tier ranks {leader.name} #{auto_row.rank} behind "
            f"{auto_leader.name} and cannot tell whether it is ({p}, smallest attainable "
            f"p = {vs.min_p_value:.3g}, difference [{vs.ci_low:+.2f}, {vs.ci_high:+.2f}])",
        )
    return Check(
        "tiers agree",
        False,
        f"the automatic tier ranks {leader.name} #{auto_row.rank}, significantly behind "
        f"{auto_leader.name} ({p})",
    )


def _beats(
    human: Leaderboard,
    auto: Leaderboard,
    leader: LeaderboardRow,
    model: str,
    production: str,
    margin: float,
    alpha: float,
) -> tuple[Check, dict[str, Any]]:
    human_prod = _row(human, model, production)
    auto_prod = _row(auto, model, production)
    if human_prod is None or auto_prod is None:
        return Check(
            "beats production",
            False,
            f"production prompt {production} has no judged runs on {model} in both tiers "
            "of this experiment: nothing to compare with",
        ), {}
    auto_leader = _row(auto, model, leader.prompt_version)
    gain = _vs(human_prod, leader)
    auto_gain = _vs(auto_prod, auto_leader) if auto_leader else None
    evidence = {"human": _comparison(gain), "auto": auto_gain and _comparison(auto_gain)}
    text = (
        f"human gain over {production}: {gain.mean_diff:+.2f} "
        f"[{gain.ci_low:+.2f}, {gain.ci_high:+.2f}], p = {gain.p_value:.3f}, "
        f"{gain.n_pairs} scenarios"
    )
    if gain.n_pairs == 0 or not gain.mean_diff >= margin:
        return Check("beats production", False, f"{text}; below the margin {margin:g}"), evidence
    if not gain.p_value < alpha:
        return Check("beats production", False, f"{text}; not significant"), evidence
    if auto_gain is None or not auto_gain.mean_diff > 0:
        diff = "none" if auto_gain is None else f"{auto_gain.mean_diff:+.2f}"
        return Check(
            "beats production", False, f"{text}; the auto tier disagrees ({diff})"
        ), evidence
    return Check(
        "beats production", True, f"{text}; auto gain {auto_gain.mean_diff:+.2f}"
    ), evidence
