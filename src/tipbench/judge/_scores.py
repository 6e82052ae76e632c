"""Scores of the two judge tiers and how they are stored on a cell run.

Each tier's per-candidate scores live in three places on the run:
- metrics: per-criterion means and `composite` (the auto tier prefixes `auto_`), logged
  with `step` = the scores' version, so MLflow's metric history keeps earlier versions;
- a compact tag (`human_scores` / `auto_scores`: `{"c1": [r, a, t, f, o], ...}`), so that
  leaderboards and agreement read every run's scores in one search;
- an artifact (`human_scores.json` / `auto_scores.json`, plus `…/v<N>.json` per version).
"""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass
from statistics import fmean
from typing import Literal

from tipbench.suite import SCORE_NAMES, composite

Tier = Literal["human", "auto"]
TIERS: tuple[Tier, ...] = ("human", "auto")


@dataclass(frozen=True)
class Scores:
    """One candidate's scores under rubric tip-v1."""

    relevance: int
    actionability: int
    tone: int
    format_ok: int
    overlong: int

    @property
    def composite(self) -> float:
        return composite(*astuple(self))

    def as_dict(self) -> dict[str, int]:
        return dict(zip(SCORE_NAMES, astuple(self), strict=True))


def metric_name(tier: Tier, name: str) -> str:
    """`composite` → `composite` (human) or `auto_composite` (auto)."""
    return name if tier == "human" else f"auto_{name}"


def scores_tag(tier: Tier) -> str:
    return f"{tier}_scores"


def version_tag(tier: Tier) -> str:
    return f"{tier}_scores_version"


def judged_at_tag(tier: Tier) -> str:
    return "judged_at" if tier == "human" else "auto_judged_at"


def judged_by_tag(tier: Tier) -> str:
    return "judged_by" if tier == "human" else "auto_judged_by"


#: A pending run's partial human scores (`{"c1": [r, a, t, f, o], ...}`, nulls where not
#: scored yet): kept until the run is completely scored, and filled into every re-export.
DRAFT_TAG = "human_draft"

Draft = dict[str, list[int | None]]


def encode_draft(draft: Draft) -> str:
    return json.dumps(draft, separators=(",", ":"))


def decode_draft(text: str | None) -> Draft:
    if not text:
        return {}
    return {cid: list(values) for cid, values in json.loads(text).items()}


def encode_scores(scores: dict[str, Scores]) -> str:
    """The compact tag value: `{"c1": [r, a, t, f, o], ...}`."""
    return json.dumps({cid: list(astuple(s)) for cid, s in scores.items()}, separators=(",", ":"))


def decode_scores(text: str | None) -> dict[str, Scores]:
    """Parse a compact scores tag (empty for a missing tag)."""
    if not text:
        return {}
    return {cid: Scores(*values) for cid, values in json.loads(text).items()}


def run_metrics(tier: Tier, scores: dict[str, Scores]) -> dict[str, float]:
    """The run-level metrics of a tier: each score's mean over the candidates, and composite."""
    values = list(scores.values())
    metrics = {
        metric_name(tier, name): fmean(getattr(s, name) for s in values) for name in SCORE_NAMES
    }
    metrics[metric_name(tier, "composite")] = fmean(s.composite for s in values)
    return metrics
