"""The judge file: what a human judge fills in, in any editor (schema version 2).

One JSON file per export: the rubric (a list of lines, readable in an editor), and per run
its `run_id`, the version of its human scores it was exported with (`scores_version`),
its scenario and `candidates[]`, each with `id`, `text` and `scores` (null until scored;
the `format_ok` / `overlong` flags come pre-filled by the rubric's rules and may be
overridden). Judging is blind by default: the model and prompt version of a run are left
out (they stay in the store) and items and candidates come in a seeded shuffled order;
an export with `reveal` adds them.

Schema version 1 (files from before versions were recorded) is still read: without a
`scores_version`, a run counts as changed since the export when its human scores were
written at or after `exported_at`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tipbench._errors import ConfigError
from tipbench.tracking import Scores

SCHEMA_VERSION: Literal[2] = 2
#: Schema versions `apply` reads: 1 has no `export_id` and no `scores_version`.
READABLE_SCHEMA_VERSIONS = (1, 2)
# Strict: `"5"`, `5.0` and `true` are not scores, in a file as through the API.
Criterion = Annotated[int, Field(ge=1, le=5, strict=True)]
Flag = Annotated[int, Field(ge=0, le=1, strict=True)]


class JudgeFileError(ConfigError):
    """A judge file (or the judging page's scores) has problems: every one of them, at once.

    The message has one line per problem, each naming the item; with a single problem it is
    one line: `SOURCE: items[2] (run …) candidates[0] (c1) scores.tone: …`.
    """

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        if len(problems) == 1:
            message = f"{source}: {problems[0]}"
        else:
            lines = [f"{source}: {len(problems)} problems, nothing written:"]
            message = "\n".join(lines + [f"  {problem}" for problem in problems])
        super().__init__(message)


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

    def started(self) -> bool:
        """True once the judge filled in any criterion (the flags come pre-filled)."""
        return any(v is not None for v in (self.relevance, self.actionability, self.tone))

    def values(self) -> list[int | None]:
        return [self.relevance, self.actionability, self.tone, self.format_ok, self.overlong]

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
    item: Annotated[int, Field(ge=1, strict=True)] | None = Field(
        default=None,
        description="The run's item number: the same in every export of the experiment and "
        'on the judging page ("Item 4 of 9"). Set by export; ignored by apply.',
    )
    scores_version: Annotated[int, Field(ge=0, strict=True)] | None = Field(
        default=None,
        description=(
            "The version of the run's human scores this file was exported with (0: none "
            "yet). `apply` refuses the run if they changed since, unless --force. Absent "
            "in schema version 1."
        ),
    )
    model: str | None = Field(default=None, description="Only in files exported with reveal.")
    prompt_version: str | None = Field(
        default=None, description="Only in files exported with reveal."
    )
    scenario: dict[str, Any]
    candidates: list[Candidate] = Field(min_length=1)
    inclusion: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The run's probability of being among the human-scored runs once its "
        "cell's queue in the experiment's judging order is scored up to it (set by export; "
        "ignored by apply: the order recorded in MLflow is what the combined tier uses).",
    )


class RubricRef(_Model):
    id: str
    text: list[str] = Field(description="The rubric document, one line per string.")

    @field_validator("text", mode="before")
    @classmethod
    def _lines(cls, value: Any) -> Any:
        """Files written before the rubric became a list held it as one string."""
        return value.split("\n") if isinstance(value, str) else value

    @classmethod
    def of(cls, rubric_id: str, document: str) -> RubricRef:
        return cls(id=rubric_id, text=document.split("\n"))

    def document(self) -> str:
        return "\n".join(self.text)


class JudgeFile(_Model):
    """A whole judge file.

    Each item records the version of its run's human scores the file was exported with
    (`scores_version`): `apply` refuses a run scored by someone else since, unless forced.
    A file of schema version 1 has no versions: there, a run counts as scored since the
    export when its human scores were written at or after `exported_at`.
    """

    schema_version: Literal[1, 2] = SCHEMA_VERSION
    experiment: str
    exported_at: str
    export_id: str | None = Field(
        default=None,
        description=(
            "Names this export (kept by re-exports onto the same file): `apply` may change "
            "scores this file wrote itself. Absent in schema version 1."
        ),
    )
    judge: str | None = Field(default=None, description="Who scores; `apply --judge` wins.")
    order_seed: int | None = Field(
        default=None, description="The seed of the shuffled order (absent with reveal)."
    )
    rubric: RubricRef
    items: list[Item]

    def dump(self, path: Path) -> None:
        """Write the file atomically: a reader never sees half of it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        data = self.model_dump(mode="json")
        for key in ("order_seed", "export_id"):
            if data[key] is None:
                del data[key]
        for item in data["items"]:
            for key in ("item", "scores_version", "model", "prompt_version", "inclusion"):
                if item[key] is None:
                    del item[key]
            for candidate in item["candidates"]:
                if candidate["previous"] is None:
                    del candidate["previous"]
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)

    def scored_candidates(self) -> int:
        """Candidates with every score filled in."""
        return sum(c.scores.complete() is not None for item in self.items for c in item.candidates)

    def started_candidates(self) -> int:
        """Candidates with at least one criterion filled in (complete ones included)."""
        return sum(c.scores.started() for item in self.items for c in item.candidates)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the judge file (shipped as `schemas/judge-file.schema.json`)."""
    schema = JudgeFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tipbench judge file"
    return schema


def load_json(path: Path) -> Any:
    """The JSON value in a file.

    Raises:
        ConfigError: one line naming the file and where its JSON is broken.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a folder, not a judge file") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: {_syntax_error(text, exc)}") from None


def _syntax_error(text: str, exc: json.JSONDecodeError) -> str:
    """Where the JSON is broken and what was expected there.

    A trailing or a missing comma is reported where the comma is (or belongs): Python's
    parser notices either only at the next token, often a line later.
    """
    before = text[: exc.pos].rstrip()
    after = text[exc.pos : exc.pos + 1]
    if before.endswith(",") and after and after in "]}":
        line, column = _line_column(text, len(before) - 1)
        return f"not valid JSON at line {line} column {column}: trailing comma before {after}"
    if exc.msg == "Expecting ',' delimiter":
        line, column = _line_column(text, len(before))
        closing = "}" if _innermost(text, exc.pos) == "{" else "]"
        return (
            f"not valid JSON at line {line} column {column}: missing comma after the value "
            f"(expected , or {closing})"
        )
    if not text[exc.pos :].strip():
        reason = "the file ends before the JSON does (truncated?)"
    else:
        reason = next(
            (why for start, why in _REASONS.items() if exc.msg.startswith(start)),
            exc.msg[:1].lower() + exc.msg[1:],
        )
    return f"not valid JSON at line {exc.lineno} column {exc.colno}: {reason}"


# Python's messages (json.JSONDecodeError.msg), said as what was expected.
_REASONS = {
    "Expecting ':' delimiter": "expected : after the key",
    "Expecting property name": 'expected a key in double quotes ("name")',
    "Expecting value": "expected a value (a number, null, a string in double quotes, [ or {)",
    "Unterminated string": 'a string is not closed (expected ")',
    "Invalid control character": "a line break inside a string (expected \\n)",
    "Invalid \\": 'an invalid escape in a string (expected \\\\, \\", \\n, \\uXXXX, …)',
    "Extra data": "text after the end of the JSON (expected nothing more)",
}


def _line_column(text: str, pos: int) -> tuple[int, int]:
    """The 1-based line and column of `pos` in `text`."""
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _innermost(text: str, pos: int) -> str:
    """The innermost `{` or `[` still open at `pos` ("" at the top level)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:pos]:
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def validate_judge_file(raw: Any) -> tuple[JudgeFile | None, list[str]]:
    """The judge file in a parsed JSON value, and every problem found in it."""
    if isinstance(raw, dict) and raw.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        readable = " or ".join(str(v) for v in READABLE_SCHEMA_VERSIONS)
        return None, [
            f"schema_version {raw.get('schema_version')!r} is not supported (expected {readable})"
        ]
    problems = duplicates(item_refs(raw))
    try:
        judge_file = JudgeFile.model_validate(raw)
    except ValidationError as exc:
        errors = [f"{_where(raw, error['loc'])}: {error['msg']}" for error in exc.errors()]
        return None, errors + problems
    return judge_file, problems


ItemRef = tuple[int, str, list[str]]  # (index, run id, candidate ids)


def item_refs(raw: Any) -> list[ItemRef]:
    """Each item's run id and candidate ids, read leniently from a file that may be invalid."""
    items = raw.get("items") if isinstance(raw, dict) else None
    refs: list[ItemRef] = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("run_id"), str):
            continue
        candidates = item.get("candidates")
        ids = [
            c["id"]
            for c in (candidates if isinstance(candidates, list) else [])
            if isinstance(c, dict) and isinstance(c.get("id"), str)
        ]
        refs.append((index, item["run_id"], ids))
    return refs


def refs_of(judge_file: JudgeFile) -> list[ItemRef]:
    return [
        (index, item.run_id, [c.id for c in item.candidates])
        for index, item in enumerate(judge_file.items)
    ]


def where_item(index: int, run_id: str) -> str:
    return f"items[{index}] (run {run_id})"


def duplicates(refs: list[ItemRef]) -> list[str]:
    """A run listed twice, a candidate listed twice within an item."""
    problems: list[str] = []
    seen_runs: set[str] = set()
    for index, run_id, ids in refs:
        if run_id in seen_runs:
            problems.append(f"{where_item(index, run_id)}: run listed twice")
        seen_runs.add(run_id)
        for cid in sorted({cid for cid in ids if ids.count(cid) > 1}):
            problems.append(f"{where_item(index, run_id)}: candidate {cid} listed twice")
    return problems


def _where(raw: Any, loc: tuple[int | str, ...]) -> str:
    """`items[3] (run abc…) candidates[1] (c2) scores.tone` for a validation error location."""
    parts: list[str] = []
    node = raw
    for key in loc:
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
    return " ".join(parts).replace(" scores ", " scores.") or "file"
