"""Pydantic models of the files a suite folder holds (validated at load time)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteFile(_Strict):
    """`suite.yaml`: the suite's name, version and the rubric it is judged by."""

    name: Identifier
    version: Text
    description: Text
    rubric: Identifier
    default_prompts: list[Identifier] = Field(default_factory=list)


class TimeSlotFile(_Strict):
    id: Identifier
    label: Text
    local_time: Annotated[str, StringConstraints(pattern=r"^\d{2}:\d{2}$")]
    context: Text


class PersonaFile(_Strict):
    id: Identifier
    name: Text
    description: Text
    tasks: list[Text] = Field(min_length=1)


class ScenariosFile(_Strict):
    """`scenarios.yaml`: personas (each with its task list) crossed with time slots."""

    time_slots: list[TimeSlotFile] = Field(min_length=1)
    personas: list[PersonaFile] = Field(min_length=1)


class ProposalFile(_Strict):
    """A proposed version's lineage: its parent, the optimization and iteration that
    proposed it, which part was rewritten, the reflection's reasons, its training scores."""

    parent: Identifier
    optimization: Identifier
    iteration: int = Field(ge=0)
    component: Literal["system", "user"]
    reasons: str = ""
    training_scores: dict[Identifier, float] = Field(default_factory=dict)


class PromptFile(_Strict):
    """`prompts/<version>.yaml`: one prompt version, a system and a user template (and, for
    a version `tipbench optimize` proposed, its `proposal`)."""

    version: Identifier
    description: Text
    system: Text
    user: Text
    proposal: ProposalFile | None = None


class LevelExample(_Strict):
    scenario: Identifier
    tip: Text


class LevelFile(_Strict):
    score: int = Field(ge=1, le=5)
    definition: Text
    example: LevelExample


class CriterionFile(_Strict):
    name: Identifier
    question: Text
    levels: list[LevelFile] = Field(min_length=5, max_length=5)


class FlagFile(_Strict):
    name: Identifier
    definition: Text
    rule: Text


class RulesFile(_Strict):
    """Thresholds of the deterministic `format_ok` / `overlong` rules."""

    max_words: int = Field(gt=0)
    max_sentences: int = Field(gt=0)
    min_words: int = Field(ge=1)


class RubricFile(_Strict):
    """`rubrics/<id>.yaml`: criteria with calibrated levels, flags, rules, composite."""

    id: Identifier
    title: Text
    instructions: Text
    criteria: list[CriterionFile] = Field(min_length=1)
    flags: list[FlagFile]
    rules: RulesFile
    composite: Text
