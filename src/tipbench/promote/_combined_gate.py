"""The promotion gate on the combined tier, where both tiers have scores (issue 23).

The combined tier's estimates use the automatic judge only as a predictor that the human
scores correct: a biased or uncalibrated judge makes them less precise, never wrong. So
where both tiers have scored the experiment and the human scores were drawn in a judging
order (their sampling is known), the combined tier decides instead of asking both tiers to
agree; the gate's other rules are unchanged:

1. enough judged: the candidate's human scores cover at least as many scenarios as a
   paired test needs to reach p < α (6 at 0.05);
2. sampling known: every human score used was drawn in the experiment's judging order (the
   judge's calibration is reported, not required);
3. ranks first: the leader is decided: every other cell's anytime-valid confidence sequence
   (`stats._confseq`, α / (C − 1) each, every cell's human scores on 6+ scenarios) lies
   below it. The gate may be asked after every label: this keeps the chance of ever
   promoting a cell that is not truly best at most α;
4. beats production: on the same model, the combined tier's gain over the production prompt
   is at least the margin and its confidence sequence excludes 0 (passes with nothing in
   production; the single-look p is shown beside it).

Otherwise (no judging order, no automatic scores, no cell ranked yet) the two tiers decide
as before, and the gate says why the combined tier was not used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tipbench.compare import Leaderboard, LeaderboardRow
from tipbench.human_tier import AnytimeLeader
from tipbench.promote._registry import ProductionPrompt
from tipbench.stats import ALPHA, Condition, PairedComparison, pairs_needed

Versus = Callable[[tuple[str, str], tuple[str, str]], PairedComparison | None]
"""``versus(a, b)``: cell b minus cell a in the combined tier (None: no estimate)."""


@dataclass(frozen=True)
class CombinedEvidence:
    """The combined tier's leaderboard, and its paired comparison of any two cells."""

    board: Leaderboard
    versus: Versus


def combined_usable(
    human: Leaderboard, auto: Leaderboard, combined: CombinedEvidence | None
) -> tuple[bool, str]:
    """Whether the combined tier decides, and why (or why not), in one phrase."""
    if combined is None:
        return False, "the combined tier was not computed"
    board, judging = combined.board, combined.board.judging
    if not human.n_runs or not auto.n_runs:
        missing = "human" if not human.n_runs else "automatic"
        return False, f"the combined tier needs both tiers' scores: no {missing} scores yet"
    if judging is None or not judging.sampling_known or judging.order is None:
        why = judging.message if judging is not None else "no judging order"
        return False, f"the combined tier is refused: {why}"
    if not board.ranked:
        return False, f"the combined tier ranks no cell yet ({judging.message})"
    figures = [row.combined for row in board.rows if row.combined is not None]
    used = sum(one.n_human for one in figures)
    worth = sum(one.n_effective for one in figures if math.isfinite(one.n_effective))
    return True, (
        f"both tiers have scores, drawn in the experiment's {judging.order} judging order: "
        f"{used} human-judged runs, worth {worth:.1f} with the judge's scores"
    )


def _enough(row: LeaderboardRow, needed: int) -> tuple[bool, str]:
    figures = row.combined
    human = figures.n_human if figures is not None else 0
    covered = figures.n_human_scenarios if figures is not None else 0
    worth = (
        f" (worth {figures.n_effective:.1f})"
        if figures is not None and math.isfinite(figures.n_effective)
        else ""
    )
    judged = f"{row.n_scenarios} scenarios, {human} human-judged runs{worth} on {covered} of them"
    if row.n_scenarios < needed:
        return False, (
            f"{row.name}: {judged}; a paired test needs {needed} scenarios to be able to "
            "tell a difference (compare's rule), for a first promotion too"
        )
    if covered < needed:
        return False, (
            f"{row.name}: {judged}; its human scores must cover {needed} scenarios "
            "(compare's rule), for a first promotion too"
        )
    return True, judged


def decide_combined(
    evidence: CombinedEvidence,
    production: ProductionPrompt | None,
    margin: float,
    alpha: float = ALPHA,
) -> tuple[str | None, str | None, list[Condition], dict[str, Any]]:
    """The combined tier's checks: (model, prompt, its conditions, evidence)."""
    board = evidence.board
    judging, anytime = board.judging, board.anytime
    assert judging is not None
    candidate = board.rows[0]
    if anytime is not None and anytime.leader is not None:
        candidate = next((row for row in board.rows if row.name == anytime.leader), candidate)
    model, prompt = candidate.model, candidate.prompt_version
    prod = production.prompt_version if production else None
    lam = candidate.combined.lam if candidate.combined is not None else 0.0
    calibration = "; ".join(c.describe() for c in board.calibration)
    enough, enough_figure = _enough(candidate, pairs_needed(alpha))
    conditions = [
        Condition("enough judged", enough, enough_figure),
        Condition(
            "sampling known",
            True,
            f"every human score used was drawn in the {judging.order} judging order; the "
            f"automatic judge counts only as a predictor (λ = {lam:.2f}), calibrated or not"
            + (f" ({calibration})" if calibration else ""),
        ),
        _first(candidate, anytime),
    ]
    record: dict[str, Any] = {
        "combined": candidate.to_dict(),
        "combined_first": [row.name for row in board.first],
        "judging": judging.to_dict(),
        **({"anytime": anytime.to_dict()} if anytime is not None else {}),
    }
    if production is None:
        conditions.append(Condition("beats production", True, "nothing is in production yet"))
    elif prod == prompt:
        conditions.append(
            Condition("beats production", False, f"{prompt} is already in production")
        )
    else:
        gain = evidence.versus((model, prod or ""), (model, prompt))
        conditions.append(_beats(gain, prod or "", model, margin))
        if gain is not None:
            record["vs_production"] = {"combined": gain.to_dict()}
    return model, prompt, conditions, record


def _first(candidate: LeaderboardRow, anytime: AnytimeLeader | None) -> Condition:
    """The leader is decided by the confidence sequences, and it is the candidate."""
    if anytime is None or not anytime.decided or anytime.leader != candidate.name:
        why = anytime.message if anytime is not None else "no confidence sequences yet"
        return Condition("ranks first", False, f"the leader is not decided: {why}")
    return Condition(
        "ranks first",
        True,
        f"the combined tier ranks {candidate.name} first: every other cell's confidence "
        f"sequence lies below it (the leader is decided; α = {anytime.alpha:.3g} each, valid "
        f"however often the gate is asked){anytime.aside_note()}",
    )


def _beats(gain: PairedComparison | None, production: str, model: str, margin: float) -> Condition:
    if gain is None:
        return Condition(
            "beats production",
            False,
            f"production prompt {production} has no combined estimate on {model} in this "
            "experiment: nothing to compare with",
        )
    single, sequence = gain.difference, gain.sequence
    low, high = (sequence.low, sequence.high) if sequence is not None else (math.nan, math.nan)
    text = (
        f"combined gain over {production}: {single.value:+.2f}, confidence sequence "
        f"[{low:+.2f}, {high:+.2f}] (single look: "
        f"[{single.low:+.2f}, {single.high:+.2f}], p = {gain.p_value:.3f}), "
        f"{gain.n_pairs} human-judged scenarios"
    )
    if not single.value >= margin:
        return Condition("beats production", False, f"{text}; below the margin {margin:g}")
    if not low > 0:
        return Condition("beats production", False, f"{text}; the sequence still holds 0")
    return Condition("beats production", True, text)
