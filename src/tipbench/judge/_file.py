"""The judge file: what a human judge fills in, in any editor (schema version 1).

One JSON file per export: the rubric text, and per run its `run_id`, model, prompt version,
scenario and `candidates[]`, each with `id`, `text` and `scores` (null until scored; the
`format_ok` / `overlong` flags come pre-filled by the rubric's rules and may be overridden).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tipbench._errors import ConfigError
from tipbench.judge._scores import Scores

SCHEMA_VERSION: Literal[1] = 1
Criterion = Annotated[int, Field(ge=1, le=5)]
Flag = Annotated[int, Field(ge=0, le=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CandidateScores(_Model):
    relevance: Criterion | None = None
    actionability: Criterion | None = None
    tone: Criterion | None = None
    format_ok: Flag | None = None
    overlong: Flag | None = None

    def complete(self) -> Scores | None:
        """The scores, if every one is filled in."""
        values = (self.relevance, self.actionability, self.tone, self.format_ok, self.overlong)
        if any(v is None for v in values):
            return None
        return Scores(*values)  # type: ignore[arg-type]

    @classmethod
    def of(cls, scores: Scores) -> CandidateScores:
        return cls(**scores.as_dict())


class Candidate(_Model):
    id: str = Field(min_length=1)
    text: str
    scores: CandidateScores
    previous: dict[str, CandidateScores] | None = Field(
        default=None, description="For re-scoring: the scores each tier gave before (ignored)."
    )


class Item(_Model):
    run_id: str = Field(min_length=1)
    model: str
    prompt_version: str
    scenario: dict[str, Any]
    candidates: list[Candidate] = Field(min_length=1)


class RubricRef(_Model):
    id: str
    text: str


class JudgeFile(_Model):
    """A whole judge file."""

    schema_version: Literal[1] = SCHEMA_VERSION
    experiment: str
    exported_at: str
    judge: str | None = Field(default=None, description="Who scores; `apply --judge` wins.")
    rubric: RubricRef
    items: list[Item]

    def dump(self, path: Path) -> None:
        """Write the file atomically: a reader never sees half of it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        data = self.model_dump(mode="json")
        for item in data["items"]:
            for candidate in item["candidates"]:
                if candidate["previous"] is None:
                    del candidate["previous"]
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the judge file (shipped as `schemas/judge-file.schema.json`)."""
    schema = JudgeFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tipbench judge file"
    return schema


def read_judge_file(path: Path) -> JudgeFile:
    """Read and validate a judge file.

    Raises:
        ConfigError: one line naming the file, the item (with its run id) and the problem.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON at line {exc.lineno} column {exc.colno} "
            "(truncated or edited badly?)"
        ) from None
    if isinstance(raw, dict) and raw.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: schema_version {raw.get('schema_version')!r} is not supported "
            f"(expected {SCHEMA_VERSION})"
        )
    try:
        judge_file = JudgeFile.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ConfigError(f"{path}: {_where(raw, error['loc'])}: {error['msg']}") from None
    _check_unique(path, judge_file)
    return judge_file


def _where(raw: Any, loc: tuple[int | str, ...]) -> str:
    """`items[3] (run abc…) candidates[1] (c2) scores.tone` for a validation error location."""
    parts: list[str] = []
    node = raw
    i = 0
    while i < len(loc):
        key = loc[i]
        if isinstance(key, int) and parts:
            label = f"{parts.pop()}[{key}]"
            node = node[key] if isinstance(node, list) and key < len(node) else None
            if isinstance(node, dict) and "run_id" in node:
                label += f" (run {node['run_id']})"
            elif isinstance(node, dict) and "id" in node:
                label += f" ({node['id']})"
            parts.append(label)
        else:
            parts.append(str(key))
            node = node.get(key) if isinstance(node, dict) else None
        i += 1
    return " ".join(parts).replace(" scores ", " scores.") or "file"


def _check_unique(path: Path, judge_file: JudgeFile) -> None:
    seen_runs: set[str] = set()
    for index, item in enumerate(judge_file.items):
        if item.run_id in seen_runs:
            raise ConfigError(f"{path}: items[{index}] (run {item.run_id}): run listed twice")
        seen_runs.add(item.run_id)
        ids = [c.id for c in item.candidates]
        for cid in ids:
            if ids.count(cid) > 1:
                raise ConfigError(
                    f"{path}: items[{index}] (run {item.run_id}): candidate {cid} listed twice"
                )
