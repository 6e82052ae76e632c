"""What a reader of a leaderboard needs to know beside its figures, worded once.

The terminal table and Markdown print these notes under the table, JSON carries them as
`notes`, the panel shows them under its table, and the chart's axis says which intervals it
draws (`interval_note`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tipbench._words import counted
from tipbench.compare._paths import mixed_paths_warnings, paths_note
from tipbench.stats import ALPHA, EXACT_MAX_PAIRS, pairs_needed
from tipbench.suite import mean_scale

if TYPE_CHECKING:
    from tipbench.compare._leaderboard import Leaderboard, LeaderboardRow


def interval_note(confidence: float) -> str:
    """Which interval each size of sample gets, and why there is none below a size."""
    percent = f"{confidence:.0%}"
    return (
        f"{percent} intervals: exact on up to {EXACT_MAX_PAIRS} scenarios (the values the "
        f"sign-flip test does not reject), bootstrap above; none (–) on fewer than "
        f"{pairs_needed(1.0 - confidence)} scenarios, where the exact test can reject no value "
        "and any interval would claim more than the data shows."
    )


def cannot_reach_alpha(row: LeaderboardRow) -> bool:
    """The comparison with the leader could not be significant, whatever its differences."""
    vs = row.vs_leader
    return vs is not None and vs.n_pairs > 0 and not vs.min_p_value < ALPHA


COMBINED_NOTE = (
    "Combined tier: each mean is the automatic judge's scores on every run, corrected by "
    "the human-minus-judge difference on the runs a human scored in the judging order "
    "(PPI++; λ = how much the judge's scores count, 0 = the human scores alone). The judge "
    "is used only as a predictor: a biased or uncalibrated one widens nothing, it only "
    "helps less. human (worth) = human-scored runs used (the human-scored runs they are "
    "worth with the judge's scores). Intervals and p: t, on the estimate's variance (the "
    "scenarios' and the unscored runs'), for a single look. Δ = this cell − the leader, "
    "paired by scenario; CS = its anytime-valid confidence sequence, valid however often "
    "you look: a cell is behind when its CS lies below 0, which needs both cells' human "
    "scores on 6+ scenarios."
)


def board_notes(board: Leaderboard, *, calibration: bool = True) -> list[str]:
    """What a reader of the leaderboard needs to know, one note a line (the automatic
    tier's judge calibration last, unless `calibration` is False)."""
    if board.tier == "combined":
        return combined_notes(board)
    notes = [
        "Means over scenarios (each weighs the same). Δ = this cell − the leader, paired by "
        f"scenario. Standing: tied when p ≥ {ALPHA} and the interval of Δ holds 0; behind "
        f"when a cell is significantly ahead (p < {ALPHA}, interval excludes 0); undecided "
        "otherwise. Cells that no cell is significantly ahead of share rank 1 (1=).",
        interval_note(board.confidence),
    ]
    notes.extend(f"* {warning}" for warning in leaderboard_warnings(board))
    if board.anytime is not None:
        notes.append(
            "For promotion (confidence sequences, valid however often you look): "
            f"{board.anytime.message}."
        )
    notes += detectable_note(board)
    notes += paths_note(board.paths)
    if len(board.ranked) < len(board.rows):
        notes.append(f"Cells judged on fewer than {board.min_scenarios} scenarios are not ranked.")
    if calibration:
        notes += [status.describe() for status in board.calibration]
    return notes


def leaderboard_warnings(board: Leaderboard) -> list[str]:
    """What keeps the leaderboard from concluding: answers made under different structured
    modes, and comparisons that can never be significant.

    With n paired scenarios the exact sign-flip test cannot give a p below 2 / 2**n; on the
    README's 3-scenario grid that is 0.25, so no difference from the leader can be
    significant at 0.05 however large it is.
    """
    warnings = []
    modes = sorted({mode for row in board.rows for mode in row.structured})
    if len(modes) > 1:
        warnings.append(
            f"the cells' answers were collected under different --structured modes "
            f"({', '.join(modes)}; see each row's `structured`): collect each mode into its "
            "own experiment to compare like with like."
        )
    warnings += mixed_paths_warnings(board.paths)
    weak = [row for row in board.rows if cannot_reach_alpha(row)]
    if weak:
        worst = max(weak, key=lambda row: row.vs_leader.min_p_value if row.vs_leader else 0.0)
        assert worst.vs_leader is not None
        pairs = worst.vs_leader.n_pairs
        warnings.append(
            f"{counted(len(weak), 'comparison')} with the leader cannot be significant: with "
            f"{counted(pairs, 'paired scenario')} the smallest attainable p is "
            f"{worst.vs_leader.min_p_value:.3g} ≥ α = {ALPHA}; judge at least "
            f"{pairs_needed(ALPHA)} scenarios per cell."
        )
    return warnings


def detectable_note(board: Leaderboard) -> list[str]:
    """What the gate can detect on the leaderboard's scenarios, as a note (none without)."""
    detectable = board.anytime.detectable if board.anytime is not None else None
    if detectable is not None and math.isfinite(detectable.gap):
        return [f"Detectable: {detectable.describe()}."]
    if board.judging is not None and board.judging.detectable:
        return [f"Detectable: {board.judging.detectable}."]
    return []


def combined_notes(board: Leaderboard) -> list[str]:
    """The combined tier's notes: how its figures are made, and how the judging stands."""
    notes = [COMBINED_NOTE]
    judging = board.judging
    if judging is not None:
        order = f" ({judging.order} judging order)" if judging.order else ""
        notes.append(f"Judging{order}: {judging.message}.")
        notes += detectable_note(board)
        if judging.unused:
            notes.append(
                f"{counted(judging.unused, 'human-scored run')} not used yet: scored out of "
                "turn, they count once the runs before them in their cell's queue are scored."
            )
    notes.extend(f"* {warning}" for warning in leaderboard_warnings(board))
    clipped = [row.name for row in board.rows if row.combined and row.combined.ci_clipped]
    if clipped:
        notes.append(
            f"Intervals cut at the composite's scale ({mean_scale('composite').text()}), where "
            f"the t interval ran past it: {', '.join(clipped)}."
        )
    if board.wider_than_human:
        notes.append(
            f"Wider than in the human tier: {', '.join(board.wider_than_human)}. This interval "
            "is about every run of the cell, so it also carries the doubt about the runs no one "
            "has scored yet; the human tier's is about the scored runs alone (exact on their "
            "scenarios). Scoring the rest narrows it."
        )
    notes += paths_note(board.paths)
    if len(board.ranked) < len(board.rows):
        notes.append(
            "Cells without human scores in the judging order on at least "
            f"{board.min_scenarios} scenarios are not ranked."
        )
    return notes
