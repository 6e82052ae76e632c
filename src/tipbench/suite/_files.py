"""Pydantic models of the files a suite folder holds, and the reader that validates them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from tipbench._errors import SuiteError

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


_Model = TypeVar("_Model", bound=BaseModel)
#: libyaml's safe loader where PyYAML has it: a suite loads 15–20× faster (every phase loads
#: it, `tipbench optimize` once per evaluation).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def read_model(file: Path, model: type[_Model]) -> _Model:
    """A suite file's YAML, validated by its model: the one home of the errors a suite's
    files give (one line naming the file, and where).

    Raises:
        SuiteError: If the file is missing, is not UTF-8 YAML, or breaks the model.
    """
    if not file.is_file():
        raise SuiteError(f"{file}: missing file")
    try:
        data: Any = yaml.load(file.read_text(encoding="utf-8"), Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(f"{file}: bad YAML{where}: {problem}") from None
    except UnicodeDecodeError:
        raise SuiteError(f"{file}: not UTF-8 text") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(part) for part in error["loc"]) or "(top level)"
        raise SuiteError(f"{file}: {loc}: {error['msg']}") from None
