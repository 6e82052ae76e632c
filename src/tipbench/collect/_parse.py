"""Parse a model's answer into candidate tips: JSON, truncated JSON, or numbered lines."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

ParseMethod = Literal["json", "partial-json", "lines", "none"]

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LIST_ITEM = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•])\s+(.+?)\s*$")
_KEYS = frozenset({"tips", "tip", "text"})
# One sentence that starts with a word: keeps small models from filling the list with
# "..." or runs of digits when their output is constrained by the schema.
TIP_PATTERN = r"^[A-Z][A-Za-z']* [A-Za-z0-9 ,;:'()/%-]{10,160}[.!]$"


def tips_schema(n_tips: int) -> dict[str, Any]:
    """The JSON schema a structured request constrains the answer to."""
    return {
        "type": "object",
        "properties": {
            "tips": {
                "type": "array",
                "items": {"type": "string", "pattern": TIP_PATTERN},
                "minItems": n_tips,
                "maxItems": n_tips,
            }
        },
        "required": ["tips"],
    }


@dataclass(frozen=True)
class ParsedTips:
    tips: tuple[str, ...]
    method: ParseMethod


def parse_tips(text: str, n_tips: int) -> ParsedTips:
    """The first `n_tips` tips found in `text`, and how they were found."""
    body = _FENCE.sub("", text.strip())
    for method, found in (
        ("json", _from_json(body)),
        ("partial-json", _from_partial_json(body)),
        ("lines", _from_lines(body)),
    ):
        tips = tuple(t for t in (_clean(x) for x in found) if t)[:n_tips]
        if tips:
            return ParsedTips(tips, method)  # type: ignore[arg-type]
    return ParsedTips((), "none")


def _from_json(body: str) -> list[str]:
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        return []
    try:
        value, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError:
        return []
    if isinstance(value, dict):
        value = next((v for k, v in value.items() if k in _KEYS and isinstance(v, list)), [])
    if not isinstance(value, list):
        return []
    items = (v.get("tip") or v.get("text") if isinstance(v, dict) else v for v in value)
    return [v for v in items if isinstance(v, str)]


def _from_partial_json(body: str) -> list[str]:
    """Complete string literals of a JSON answer cut off by the token limit."""
    if not body.lstrip().startswith(("{", "[")):
        return []
    found = []
    for match in _JSON_STRING.finditer(body):
        tail = body[match.end() :].lstrip()
        if tail.startswith(":") or match.group(1) in _KEYS:
            continue  # an object key, not a tip
        try:
            found.append(json.loads(f'"{match.group(1)}"'))
        except json.JSONDecodeError:
            continue
    return found


def _from_lines(body: str) -> list[str]:
    return [m.group(1) for line in body.splitlines() if (m := _LIST_ITEM.match(line))]


def _clean(tip: str) -> str:
    return " ".join(tip.split()).strip("\"'“”‘’ ")
