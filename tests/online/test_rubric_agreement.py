"""Does the rubric predict what users do? (issue 49, items 3 and 6): a leaderboard built by
compare's own `build_leaderboard` from judged runs, against the online tier of a seeded world
where v2-mentor's tips truly do best and v1's worst; criteria that rank the sources as users
do agree, a rubric that ranks them the other way is shown as disagreeing."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from support.online_worlds import MODEL, OnlineWorld, source
from tipbench.compare import Leaderboard, build_leaderboard
from tipbench.online import agreement, direction, online_tier, render_online
from tipbench.suite import composite
from tipbench.tracking import CellRun

# Per prompt: relevance tracks users (v1 < v3 < v2), tone runs against them, actionability is
# the same everywhere, overlong is rarest where users do best; the composite favours v1.
JUDGED = {
    "v1": {"relevance": 3.0, "actionability": 3.0, "tone": 4.8, "format_ok": 1.0, "overlong": 0.3},
    "v3-few-shot": {"relevance": 3.5, "actionability": 3.0, "tone": 4.0, "format_ok": 0.9,
                    "overlong": 0.2},
    "v2-mentor": {"relevance": 3.9, "actionability": 3.0, "tone": 2.5, "format_ok": 0.8,
                  "overlong": 0.1},
}  # fmt: skip


def judged_board(judged: dict[str, dict[str, float]], tier: str = "auto") -> Leaderboard:
    prefix = "auto_" if tier == "auto" else ""
    runs = []
    for prompt, means in judged.items():
        for scenario in range(4):
            metrics = {f"{prefix}{k}": v for k, v in means.items()}
            metrics[f"{prefix}composite"] = composite(**means) + 0.05 * scenario
            run_id = f"{prompt}-{scenario}"
            runs.append(CellRun(MODEL, prompt, f"scenario-{scenario}", run_id=run_id,
                                metrics=metrics, status="FINISHED"))  # fmt: skip
    return build_leaderboard(runs, tier, min_scenarios=3, n_resamples=200)  # type: ignore[arg-type]


def test_criteria_that_track_users_agree_and_a_contrary_rubric_disagrees() -> None:
    board = judged_board(JUDGED)
    tier = online_tier(OnlineWorld().log(21, 3000))
    found = agreement(board, tier)
    assert set(found.sources) == {source(p) for p in JUDGED}
    verdicts = {c.criterion: c.verdict for c in found.criteria}
    assert verdicts == {
        "relevance": "agrees",
        "overlong": "agrees",  # rarer where users do better: the composite's direction
        "tone": "disagrees",
        "composite": "disagrees",  # the rubric as a whole ranks v1 first: users rank it last
        "format_ok": "disagrees",
        "actionability": "no spread",
    }
    assert direction("overlong") == -1.0 and direction("format_ok") == 1.0
    online = {r.source: r.value.value for r in tier.rows if r.value is not None}
    for criterion in ("relevance", "tone", "composite"):
        rho = found.criterion(criterion).rho
        assert rho is not None and rho.method == "bootstrap" and rho.n == 3
        judged = [row.mean(criterion) for row in board.rows]
        expected = spearmanr(judged, [online[row.name] for row in board.rows]).statistic
        assert rho.value == pytest.approx(expected)
        assert rho.low <= rho.value <= rho.high
    lines = render_online(tier, [found])
    assert any("does the auto tier's rubric predict what users do?" in line for line in lines)
    assert any(line.startswith("tone") and "disagrees" in line for line in lines)


def test_sources_users_cannot_tell_apart_leave_the_agreement_unclear() -> None:
    """Every prompt's tips alike with users: whatever the rubric says, its agreement with
    behaviour cannot be read from these logs (the interval holds 0) in most of them."""
    level = OnlineWorld(effects=dict.fromkeys(JUDGED, 0.0), logging=np.full((4, 6), 1 / 6))
    board = judged_board(JUDGED)
    unclear = [
        agreement(board, online_tier(level.log(seed, 600))).criterion("relevance").verdict
        == "unclear"
        for seed in range(20)
    ]
    assert np.mean(unclear) >= 0.8, unclear


def test_too_few_sources_with_both_say_so() -> None:
    board = judged_board({p: JUDGED[p] for p in ("v1", "v2-mentor")})
    found = agreement(board, online_tier(OnlineWorld().log(4, 1500)))
    assert {c.verdict for c in found.criteria} == {"too few sources"}
    assert all(c.rho is None for c in found.criteria)
