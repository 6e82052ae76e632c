"""`decide()`, the promotion gate, on leaderboards built in memory: every way it refuses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import pytest

from support.judged_runs import uniform
from tipbench.auto_judge import JudgeCalibration
from tipbench.compare import Leaderboard, build_leaderboard
from tipbench.promote import DEFAULT_MARGIN_POINTS, ProductionPrompt, decide
from tipbench.suite import load_suite
from tipbench.tracking import CellRun, run_metrics

MODEL = "ollama:qwen2.5:1.5b"
SCENARIOS = [s.id for s in load_suite().scenarios]  # 8
V1, V2 = "v1", "v2-mentor"


Calibrated = Literal["yes", "below", "never"]
JUDGE = "ollama:qwen2.5:3b"


def calibration(calibrated: Calibrated) -> JudgeCalibration:
    """The automatic judge's calibration: κ 0.9 on every criterion, 0.3, or none at all."""
    if calibrated == "never":
        return JudgeCalibration(JUDGE, "tip-v1", 0.6)
    kappa = 0.9 if calibrated == "yes" else 0.3
    kappas = dict.fromkeys(("relevance", "actionability", "tone", "format_ok", "overlong"), kappa)
    return JudgeCalibration(JUDGE, "tip-v1", 0.6, kappas, answered=35, tips=35)


def boards(
    human: dict[str, int],
    auto: dict[str, int],
    n: int = 8,
    n_auto: int | None = None,
    calibrated: Calibrated = "yes",
) -> tuple[Leaderboard, Leaderboard]:
    """Per prompt, every one of `n` scenarios scored with the given composite by each tier
    (the automatic tier on `n_auto` scenarios, if given), the automatic judge calibrated or
    not."""
    runs = [
        CellRun(
            MODEL,
            prompt,
            scenario,
            metrics=run_metrics("human", uniform(human[prompt]))
            | (run_metrics("auto", uniform(auto[prompt])) if i < (n_auto or n) else {}),
        )
        for prompt in human
        for i, scenario in enumerate(SCENARIOS[:n])
    ]
    auto_board = build_leaderboard(runs, "auto")
    return build_leaderboard(runs, "human"), replace(
        auto_board, calibration=(calibration(calibrated),)
    )


def in_production(prompt_version: str) -> ProductionPrompt:
    return ProductionPrompt("tipbench-tips", 1, prompt_version, "a-template-hash")


@dataclass(frozen=True)
class Case:
    human: dict[str, int]
    auto: dict[str, int]
    production: str | None = None
    n: int = 8
    n_auto: int | None = None
    margin: float = DEFAULT_MARGIN_POINTS
    calibrated: Calibrated = "yes"
    failing: tuple[str, ...] = ()  # the checks that refuse; none: promoted
    figure: str = ""


CASES = {
    "first promotion": Case({V1: 9, V2: 13}, {V1: 8, V2: 12}, figure="nothing is in production"),
    "too few human-judged scenarios": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, n=2,
        failing=("enough judged",), figure="no cell has 3+ human-judged scenarios",
    ),
    "too few auto-judged scenarios": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, n_auto=2,
        failing=("enough judged", "tiers agree"), figure="2 auto-judged scenarios, 6 needed",
    ),
    "a first promotion on three scenarios": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, n=3,
        failing=("enough judged", "ranks first"),
        figure="3 human- and 3 auto-judged scenarios; a paired test needs 6",
    ),
    "three scenarios cannot be decided": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, n=3,
        failing=("enough judged", "ranks first"),
        figure="the human tier's leader is not decided: cannot be decided on 3 scenarios: "
        "collect at least 6",
    ),
    "the automatic tier cannot tell": Case(
        {V1: 9, V2: 13}, {V1: 14, V2: 12}, n_auto=3,
        failing=("enough judged", "tiers agree"),
        figure="the automatic tier cannot tell whether ollama:qwen2.5:1.5b|v2-mentor is behind",
    ),
    "both tiers tie two cells": Case(
        {V1: 13, V2: 13}, {V1: 12, V2: 12},
        failing=("ranks first", "tiers agree"), figure="the gate cannot tell which to promote",
    ),
    "the automatic judge is calibrated below the threshold": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, calibrated="below",
        failing=("judge calibrated", "tiers agree"),
        figure="the automatic tier is not counted: judge ollama:qwen2.5:3b is NOT calibrated: "
        "κ relevance 0.30, actionability 0.30, tone 0.30 on the calibration set, below the "
        "threshold 0.60",
    ),
    "the automatic judge was never calibrated": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, calibrated="never",
        failing=("judge calibrated", "tiers agree"), figure="never checked against",
    ),
    "the automatic tier disagrees on the leader": Case(
        {V1: 9, V2: 13}, {V1: 14, V2: 10},
        failing=("tiers agree",), figure="#2, significantly behind",
    ),
    "the automatic tier ties the leader with its own": Case(
        {V1: 9, V2: 13}, {V1: 12, V2: 12}, figure="ties",
    ),
    "already in production": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, production=V2,
        failing=("beats production",), figure="v2-mentor is already in production",
    ),
    "nothing to compare with": Case(
        {V1: 9, V2: 13}, {V1: 8, V2: 12}, production="v3-few-shot",
        failing=("beats production",), figure="nothing to compare with",
    ),
    "below the margin": Case(
        {V1: 12, V2: 13}, {V1: 12, V2: 13}, production=V1, margin=2,
        failing=("beats production",), figure="below the margin 2",
    ),
    "not significant": Case(
        {V1: 12, V2: 13}, {V1: 12, V2: 13}, production=V1, n=3,
        failing=("enough judged", "ranks first", "beats production"),
        figure="; not decided",  # 3 pairs: no sequence at all
    ),
    "the automatic tier sees no gain over production": Case(
        {V1: 12, V2: 13}, {V1: 12, V2: 12}, production=V1,
        failing=("beats production",), figure="the auto tier disagrees (+0.00)",
    ),
    "beats production in both tiers": Case(
        {V1: 12, V2: 13}, {V1: 12, V2: 13}, production=V1, figure="auto gain +1.00",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_decide(case: Case) -> None:
    human, auto = boards(case.human, case.auto, case.n, case.n_auto, case.calibrated)
    production = in_production(case.production) if case.production else None

    decision = decide(human, auto, production, case.margin)

    assert decision.promote == (not case.failing)
    assert tuple(check.name for check in decision.conditions if not check.passed) == case.failing
    figures = " | ".join(check.figure for check in decision.conditions)
    assert case.figure in figures
    assert decision.production == case.production
    if decision.promote:  # the one cell first in both tiers
        assert (decision.model, decision.prompt_version) == (MODEL, V2)


def test_a_tie_is_not_decided_by_name() -> None:
    """The human tier cannot separate two prompts (equal on every scenario); the calibrated
    automatic tier puts one of them significantly ahead. Which name sorts first must not
    change the outcome: before, the human "leader" was the one first by name, and the gate
    passed or refused with it. Since issue 31 it refuses both ways: the human scores, the
    truth the gate answers to, do not show either ahead (two equal cells: promoting either
    is a false promotion)."""
    outcomes = []
    for winner, other in ((V1, V2), (V2, V1)):  # the same tie, the names swapped
        human, auto = boards({winner: 13, other: 13}, {winner: 12, other: 9})
        assert {row.rank_text for row in human.rows} == {"1="}
        decision = decide(human, auto, None)
        outcomes.append((decision.promote, decision.prompt_version == winner))
        figures = " | ".join(check.figure for check in decision.conditions)
        assert f"both tiers rank {MODEL}|{winner} first" in figures
        assert "the human tier ties it with its leader" in figures or decision.evidence[
            "human"]["standing"] == "leader"  # fmt: skip
    assert outcomes == [(False, True), (False, True)]


def _runs(human: dict[str, int], auto: dict[str, int], scenarios: dict[str, int]) -> list[CellRun]:
    """Per prompt, its first `scenarios[prompt]` scenarios (8 if not given), scored with a
    constant composite by the human where `human` names the prompt and by the judge where
    `auto` does."""
    return [
        CellRun(
            MODEL,
            prompt,
            scenario,
            metrics=(run_metrics("human", uniform(human[prompt])) if prompt in human else {})
            | (run_metrics("auto", uniform(auto[prompt])) if prompt in auto else {}),
        )
        for prompt in {**human, **auto}
        for scenario in SCENARIOS[: scenarios.get(prompt, 8)]
    ]


def test_no_tier_decides_on_cells_that_carry_no_human_scores() -> None:
    """The repro of issue 43: human scores on one cell only, a calibrated judge that cannot
    separate it from another cell (so both tiers put it first). Before, the human tier held
    only the human-judged cell, a pool of one counted as decided, and the gate promoted.
    The other cell has runs, so it is a contender: no leader without its human scores."""
    runs = _runs({V2: 13}, {V1: 12, V2: 12}, {})
    human, auto = build_leaderboard(runs, "human"), build_leaderboard(runs, "auto")
    auto = replace(auto, calibration=(calibration("yes"),))

    decision = decide(human, auto, None)

    assert not decision.promote
    ranks = next(check for check in decision.conditions if check.name == "ranks first")
    assert not ranks.passed
    assert f"{MODEL}|{V1}: 0" in ranks.figure


def test_a_cell_short_of_scenarios_is_set_aside_and_does_not_block_the_others() -> None:
    """A third prompt ran on 5 of the 8 scenarios (too few for any paired test) and trails
    by 7 points: the gate decides between the two others and says what it set aside."""
    runs = _runs({V1: 9, V2: 13, "v3-few-shot": 6}, {V1: 8, V2: 12, "v3-few-shot": 5},
                 {"v3-few-shot": 5})  # fmt: skip
    human, auto = build_leaderboard(runs, "human"), build_leaderboard(runs, "auto")
    auto = replace(auto, calibration=(calibration("yes"),))

    decision = decide(human, auto, None)

    assert decision.promote and decision.prompt_version == V2
    assert human.anytime is not None and human.anytime.set_aside == {f"{MODEL}|v3-few-shot": 5}
    assert "set aside, too few scenarios to compare: " in human.anytime.message
