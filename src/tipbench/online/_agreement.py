"""Does the rubric predict what users do? The agreement of a leaderboard's judged scores with
the online tier, per criterion and for the composite, over the sources that have both.

For each criterion, Spearman's rank correlation ρ between the sources' judged means (each
criterion in the direction the composite counts it: a higher `overlong` share lowers the
composite, so it is correlated negated) and their online values. Its 95% interval is a
parametric bootstrap of the online side (Efron & Tibshirani, *An Introduction to the
Bootstrap*, 1993, ch. 6): each source's online value is drawn `DRAWS` times from the normal
of its estimate and standard error, and ρ recomputed; the 2.5th and 97.5th percentiles are
the interval. It answers "do these sources rank with users as the rubric ranks them?": the
judged means are taken as measured (their own intervals are on the leaderboard), and sources
are not resampled (a team asks about its own cells, not a population of cells). The draws are
independent across sources, though sources estimated on the same decisions covary; the
paired comparisons of the online tier are the place to tell two sources apart.

A criterion "agrees" where the interval lies above 0, "disagrees" where it lies below, and is
"unclear" otherwise; with fewer than `MIN_SOURCES` sources there is no agreement to read, and a
criterion every source scored alike has "no spread".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.stats import rankdata

from tipbench.compare import COLUMNS, Leaderboard
from tipbench.online._tier import OnlineTier
from tipbench.stats import ALPHA, Estimate
from tipbench.suite import composite

DRAWS = 2000
MIN_SOURCES = 3
SEED = 49  # the bootstrap's draws: the same table every time it is asked
Verdict = Literal["agrees", "disagrees", "unclear", "too few sources", "no spread"]


def direction(criterion: str) -> float:
    """+1 where a higher score raises the composite, −1 where it lowers it (the rubric's
    `composite` itself says which)."""
    if criterion == "composite":
        return 1.0
    base = dict.fromkeys(COLUMNS[1:], 0.0)
    return math.copysign(1.0, composite(**{**base, criterion: 1.0}) - composite(**base))


@dataclass(frozen=True)
class CriterionAgreement:
    criterion: str
    rho: Estimate | None  # Spearman's ρ with its bootstrap interval (None: none to read)
    verdict: Verdict
    direction: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "direction": self.direction,
            "rho": None if self.rho is None else self.rho.to_dict(),
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Agreement:
    """A tier's rubric against the online tier, over the sources both rank."""

    tier: str
    sources: tuple[str, ...]
    criteria: tuple[CriterionAgreement, ...]

    def criterion(self, name: str) -> CriterionAgreement:
        return next(c for c in self.criteria if c.criterion == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "sources": list(self.sources),
            "method": f"Spearman's rho; {DRAWS:,} parametric bootstrap draws of the online side",
            "criteria": [c.to_dict() for c in self.criteria],
        }


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ρ of the fixed `x` (n,) with each row of `y` (D, n): Pearson's r of their ranks."""
    rx = rankdata(x)
    ry = rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(), ry - ry.mean(axis=-1, keepdims=True)
    r: np.ndarray = (ry @ rx) / np.sqrt((ry**2).sum(axis=-1) * (rx**2).sum())
    return r


def agreement(board: Leaderboard, tier: OnlineTier, draws: int = DRAWS) -> Agreement:
    """The agreement of `board`'s ranked cells with the online tier's estimated sources."""
    online = {r.source: r.value for r in tier.rows if r.value is not None and r.value.has_interval}
    rows = [r for r in board.rows if r.ranked and r.name in online]
    sources = tuple(r.name for r in rows)
    criteria = []
    values = np.array([online[s].value for s in sources])
    spread = np.array([online[s].se for s in sources])
    rng = np.random.default_rng(SEED)
    drawn = values + rng.standard_normal((draws, len(sources))) * spread
    for column in COLUMNS:
        sign = direction(column)
        if len(sources) < MIN_SOURCES:
            criteria.append(CriterionAgreement(column, None, "too few sources", sign))
            continue
        judged = sign * np.array([r.mean(column) for r in rows])
        if np.ptp(judged) == 0 or not np.isfinite(judged).all():
            criteria.append(CriterionAgreement(column, None, "no spread", sign))
            continue
        rho = float(_spearman(judged, values[None, :])[0])
        low, high = np.quantile(_spearman(judged, drawn), [ALPHA / 2, 1 - ALPHA / 2])
        estimate = Estimate(rho, float(low), float(high), "bootstrap", n=len(sources))
        verdict: Verdict = "agrees" if low > 0 else "disagrees" if high < 0 else "unclear"
        criteria.append(CriterionAgreement(column, estimate, verdict, sign))
    return Agreement(board.tier, sources, tuple(criteria))
