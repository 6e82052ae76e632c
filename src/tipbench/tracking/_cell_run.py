"""The typed view of a cell run: `CellRun.of(run)` reads a run back (`StoredRun`), and
`CellRun.params()` and `CellRun.tags()` are what a writer logs for it (the layout's names:
`tracking._layout`; the judge tiers' scores: `tracking._scores`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tipbench.tracking._layout import CELL_OK, KIND_CELL, KIND_TAG, CellMetric, CellParam, CellTag
from tipbench.tracking._scores import (
    DRAFT_AT_TAG,
    DRAFT_BY_TAG,
    DRAFT_TAG,
    SOURCE_TAG,
    Draft,
    Scores,
    ScoresVersion,
    Tier,
    decode_draft,
    decode_scores,
    judged_at_tag,
    judged_by_tag,
    scores_tag,
    version_tag,
)

if TYPE_CHECKING:
    from tipbench.tracking._sql_reader import StoredRun


@dataclass(frozen=True)
class CellRun:
    """A cell run: built from an MLflow run with `of`, or to be written with `params`/`tags`.

    The fields read back what collect wrote; `metrics` and `extra_tags` hold the rest of the
    run (the judge tiers' metrics and tags), read through `scores` and `scores_version`.
    """

    model: str
    prompt_version: str
    scenario_id: str
    backend: str = ""
    cell_key: str = ""
    cell_status: str = CELL_OK
    scenario_hash: str = ""
    prompt_hash: str = ""
    suite: str = ""
    rubric: str = ""
    model_identity: str = ""
    parse_method: str = ""
    generation_path: str = ""
    error: str | None = None
    trace_id: str = ""
    judge_pending: bool = False
    settings: dict[str, str] = field(default_factory=dict)  # temperature, n_tips, seed, ...
    run_id: str = ""
    name: str = ""
    status: str = ""  # MLflow's run status
    metrics: Mapping[str, float] = field(default_factory=dict)
    extra_tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, run: StoredRun) -> CellRun:
        """The view of a run as read back (missing fields read as empty)."""
        params, tags = run.params, run.tags
        return cls(
            model=params.get(CellParam.MODEL, ""),
            prompt_version=params.get(CellParam.PROMPT_VERSION, ""),
            scenario_id=params.get(CellParam.SCENARIO_ID, ""),
            backend=params.get(CellParam.BACKEND, ""),
            cell_key=tags.get(CellTag.CELL_KEY, ""),
            cell_status=tags.get(CellTag.CELL_STATUS, ""),
            scenario_hash=tags.get(CellTag.SCENARIO_HASH, ""),
            prompt_hash=tags.get(CellTag.PROMPT_HASH, ""),
            suite=tags.get(CellTag.SUITE, ""),
            rubric=tags.get(CellTag.RUBRIC, ""),
            model_identity=tags.get(CellTag.MODEL_IDENTITY, ""),
            parse_method=tags.get(CellTag.PARSE_METHOD, ""),
            generation_path=tags.get(CellTag.GENERATION_PATH, ""),
            error=tags.get(CellTag.ERROR),
            trace_id=tags.get(CellTag.TRACE_ID, ""),
            judge_pending=tags.get(CellTag.JUDGE_PENDING) == "true",
            settings={k: params[k] for k in _SETTINGS if k in params},
            run_id=run.run_id,
            name=run.name,
            status=run.status,
            metrics=run.metrics,
            extra_tags=tags,
        )

    @property
    def ok(self) -> bool:
        """The cell has candidates (its generation and parsing succeeded)."""
        return self.cell_status == CELL_OK

    @property
    def finished(self) -> bool:
        """The run ended FINISHED with a successful cell: resume skips it."""
        return self.status == "FINISHED" and self.ok

    @property
    def structured(self) -> str:
        """Collect's structured mode; runs from before the modes were all schema-constrained."""
        return self.settings.get(CellParam.STRUCTURED, "schema")

    @property
    def label(self) -> str:
        """The run's name, else its id, for messages."""
        return self.name or self.run_id

    @property
    def scenario_key(self) -> str:
        """The scenario id with its content hash: a changed scenario is another scenario."""
        scenario = self.scenario_id or self.run_id
        return f"{scenario}#{self.scenario_hash}" if self.scenario_hash else scenario

    @property
    def candidate_count(self) -> int:
        return int(self.metrics.get(CellMetric.CANDIDATE_COUNT, 0))

    def judged_by(self, tier: Tier) -> bool:
        """Whether the tier has scored this run."""
        return scores_tag(tier) in self.extra_tags

    def judge_of(self, tier: Tier) -> str:
        """Who gave the tier's current scores: a person, or the judge model's spec."""
        return self.extra_tags.get(judged_by_tag(tier), "")

    def scores(self, tier: Tier) -> dict[str, Scores]:
        """The tier's current scores per candidate id (empty if it has not scored the run)."""
        return decode_scores(self.extra_tags.get(scores_tag(tier)))

    def scores_version(self, tier: Tier) -> int:
        """The version of the tier's current scores (0: none yet)."""
        return int(self.extra_tags.get(version_tag(tier), "0"))

    def human_version(self) -> ScoresVersion:
        """The current version of the human scores: a draft's, else the complete scores'."""
        tags = self.extra_tags
        draft = DRAFT_TAG in tags
        return ScoresVersion(
            number=self.scores_version("human"),
            judged_by=tags.get(DRAFT_BY_TAG if draft else judged_by_tag("human"), ""),
            judged_at=tags.get(DRAFT_AT_TAG if draft else judged_at_tag("human"), ""),
            source=tags.get(SOURCE_TAG, ""),
            draft=draft,
        )

    def draft(self) -> Draft:
        """The human's partial scores of a run not completely scored yet (empty: none)."""
        return decode_draft(self.extra_tags.get(DRAFT_TAG))

    def params(self) -> dict[str, str]:
        """The params a writer logs for this cell."""
        return {
            CellParam.MODEL: self.model,
            CellParam.BACKEND: self.backend or self.model.split(":", 1)[0],
            CellParam.PROMPT_VERSION: self.prompt_version,
            CellParam.SCENARIO_ID: self.scenario_id,
        } | self.settings

    def tags(self) -> dict[str, str]:
        """The tags a writer logs for this cell (before any judge tier scores it)."""
        tags = {
            KIND_TAG: KIND_CELL,
            CellTag.CELL_KEY: self.cell_key,
            CellTag.CELL_STATUS: self.cell_status,
            CellTag.SCENARIO_HASH: self.scenario_hash,
            CellTag.PROMPT_HASH: self.prompt_hash,
            CellTag.SUITE: self.suite,
            CellTag.RUBRIC: self.rubric,
            CellTag.MODEL_IDENTITY: self.model_identity,
            CellTag.TRACE_ID: self.trace_id,
            CellTag.JUDGE_PENDING: "true" if self.judge_pending else "false",
        }
        tags = {k: v for k, v in tags.items() if v}
        if self.parse_method:
            tags[CellTag.PARSE_METHOD] = self.parse_method
        if self.generation_path:
            tags[CellTag.GENERATION_PATH] = self.generation_path
        if self.error is not None:
            tags[CellTag.ERROR] = self.error
        return tags


_SETTINGS = (
    CellParam.TEMPERATURE,
    CellParam.N_TIPS,
    CellParam.SEED,
    CellParam.MAX_TOKENS,
    CellParam.STRUCTURED,
)
