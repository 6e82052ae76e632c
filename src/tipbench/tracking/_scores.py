"""The judge tiers' scores on a cell run: their tags, metrics and versioned artifacts.

Each tier (`Tier`: the human, the automatic judge) keeps its current scores per candidate in
one compact tag (`scores_tag`, read by a single search), with the version, who judged and
when; each score's mean over the candidates and the composite as metrics (`metric_name`),
logged at step = the version; and every version as `<tier>_scores/v<N>.json`. A pending
run's partial human scores are a draft (`DRAFT_TAG`). `score_fields` and `draft_fields` are
what a tier logs; `CellRun.scores` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from statistics import fmean
from typing import Any, Literal

from tipbench.suite import SCORE_NAMES, composite
from tipbench.tracking._layout import CellTag

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
    """The compact scores tag: `{"c1": [r, a, t, f, o], ...}`, read by one search."""
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
#: Who wrote the draft, and when (the complete scores have `judged_by` and `judged_at`).
DRAFT_BY_TAG = "human_draft_by"
DRAFT_AT_TAG = "human_draft_at"
#: Where the current version of the human scores came from: the `export_id` of the judge
#: file applied, `SOURCE_PAGE` for the judging page and the API, `SOURCE_FILE` for a judge
#: file without an export id (schema version 1).
SOURCE_TAG = "human_scores_source"
SOURCE_PAGE = "page"
SOURCE_FILE = "file"

Draft = dict[str, list[int | None]]


@dataclass(frozen=True)
class ScoresVersion:
    """The current version of a run's human scores: its number, who wrote it, when, where.

    Every write of human scores, complete or a draft, is a new version (0: none yet).
    """

    number: int
    judged_by: str = ""
    judged_at: str = ""  # ISO 8601, "" if not known
    source: str = ""  # see SOURCE_TAG; "" for versions written before sources were kept
    draft: bool = False

    def describe(self) -> str:
        """`version 3, by bob on the judging page at 2026-11-23T10:02:00+00:00`."""
        by = f", by {self.judged_by}" if self.judged_by else ""
        where = {SOURCE_PAGE: " on the judging page", "": ""}.get(self.source, " from a judge file")
        when = f" at {self.judged_at}" if self.judged_at else ""
        kind = " (a draft)" if self.draft else ""
        return f"version {self.number}{kind}{by}{where}{when}"


def encode_draft(draft: Draft) -> str:
    return json.dumps(draft, separators=(",", ":"))


def decode_draft(text: str | None) -> Draft:
    if not text:
        return {}
    return {cid: list(values) for cid, values in json.loads(text).items()}


def encode_scores(scores: Mapping[str, Scores]) -> str:
    """The compact tag value: `{"c1": [r, a, t, f, o], ...}`."""
    return json.dumps({cid: list(astuple(s)) for cid, s in scores.items()}, separators=(",", ":"))


def decode_scores(text: str | None) -> dict[str, Scores]:
    """Parse a compact scores tag (empty for a missing tag)."""
    if not text:
        return {}
    return {cid: Scores(*values) for cid, values in json.loads(text).items()}


def run_metrics(tier: Tier, scores: Mapping[str, Scores]) -> dict[str, float]:
    """The run-level metrics of a tier: each score's mean over the candidates, and composite."""
    values = list(scores.values())
    metrics = {
        metric_name(tier, name): fmean(getattr(s, name) for s in values) for name in SCORE_NAMES
    }
    metrics[metric_name(tier, "composite")] = fmean(s.composite for s in values)
    return metrics


@dataclass(frozen=True)
class ScoreFields:
    """What version `version` of a tier's scores adds to a cell run."""

    version: int  # the step its metrics are logged at
    tags: dict[str, str]
    metrics: dict[str, float]
    artifacts: dict[str, str]  # file name -> text


def score_fields(
    tier: Tier,
    scores: Mapping[str, Scores],
    judged_by: str,
    version: int,
    judged_at: str | None = None,
    source: str = "",
) -> ScoreFields:
    """The tags, metrics and artifacts of version `version` of a tier's scores on a run.

    `source` (human tier) says where the scores came from (see `SOURCE_TAG`).
    """
    judged_at = judged_at or _now()
    tags = {
        scores_tag(tier): encode_scores(scores),
        version_tag(tier): str(version),
        judged_at_tag(tier): judged_at,
        judged_by_tag(tier): judged_by,
    }
    if tier == "human":
        tags |= {CellTag.JUDGE_PENDING: "false", CellTag.JUDGE_KIND: "human", SOURCE_TAG: source}
    candidates = {cid: s.as_dict() | {"composite": s.composite} for cid, s in scores.items()}
    document = _version_document(tier, version, judged_by, judged_at, source, candidates)
    artifacts = {f"{tier}_scores.json": document, f"{tier}_scores/v{version}.json": document}
    return ScoreFields(version, tags, run_metrics(tier, scores), artifacts)


def draft_fields(draft: Draft, judged_by: str, version: int, source: str) -> ScoreFields:
    """The tags and artifact of version `version` of a run's human scores as a draft.

    A draft has no metrics; its version is kept as `human_scores/v<N>.json` like any other.
    """
    judged_at = _now()
    tags = {
        DRAFT_TAG: encode_draft(draft),
        DRAFT_BY_TAG: judged_by,
        DRAFT_AT_TAG: judged_at,
        version_tag("human"): str(version),
        SOURCE_TAG: source,
    }
    candidates = {cid: dict(zip(SCORE_NAMES, values, strict=True)) for cid, values in draft.items()}
    document = _version_document(
        "human", version, judged_by, judged_at, source, candidates, draft=True
    )
    return ScoreFields(version, tags, {}, {f"human_scores/v{version}.json": document})


def version_scores(document: Mapping[str, Any]) -> dict[str, list[int | None]]:
    """The scores per candidate of a parsed `<tier>_scores/v<N>.json`, draft or complete."""
    candidates = document.get("candidates", {})
    return {cid: [values.get(name) for name in SCORE_NAMES] for cid, values in candidates.items()}


def _version_document(
    tier: Tier,
    version: int,
    judged_by: str,
    judged_at: str,
    source: str,
    candidates: Mapping[str, Mapping[str, float | int | None]],
    *,
    draft: bool = False,
) -> str:
    document: dict[str, Any] = {
        "tier": tier,
        "version": version,
        "judged_by": judged_by,
        "judged_at": judged_at,
    }
    if tier == "human":
        document |= {"source": source, "draft": draft}
    document["candidates"] = candidates
    return json.dumps(document, indent=2)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
