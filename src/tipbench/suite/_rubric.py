"""The rubric: calibrated criteria, the deterministic flag rules and the composite score."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

CRITERIA = ("relevance", "actionability", "tone")
FLAGS = ("format_ok", "overlong")
SCORE_NAMES = CRITERIA + FLAGS
#: The scores a judge may give: 1–5 for each criterion, 0/1 for each flag.
CRITERION_LEVELS = (1, 2, 3, 4, 5)
FLAG_LEVELS = (0, 1)
COMPOSITE_RANGE = (2.0, 17.0)


def levels(name: str) -> tuple[int, ...]:
    """The valid scores of a criterion (1–5) or a flag (0/1), in ordinal order.

    Raises:
        KeyError: `name` is not one of `SCORE_NAMES`.
    """
    if name in CRITERIA:
        return CRITERION_LEVELS
    if name in FLAGS:
        return FLAG_LEVELS
    raise KeyError(name)


def levels_text(name: str) -> str:
    """A score's valid values in words: `1–5` for a criterion, `0/1` for a flag."""
    found = levels(name)
    return "/".join(map(str, found)) if len(found) == 2 else f"{found[0]}–{found[-1]}"


@dataclass(frozen=True)
class Scale:
    """What a figure's numbers run over: points of the rubric, or a share of candidates.

    Attributes:
        low: The smallest value the figure can take.
        high: The largest.
        unit: "points" (a score or a mean of scores) or "share" (a mean of 0/1 flags: the
            share of candidates with the flag set).
    """

    low: float
    high: float
    unit: Literal["points", "share"] = "points"

    def text(self) -> str:
        """`1–5`, `2–17`, or `share 0–1`, for a heading or a caption."""
        span = f"{self.low:g}–{self.high:g}"
        return f"share {span}" if self.unit == "share" else span

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "unit": self.unit}


def mean_scale(name: str) -> Scale:
    """The scale of a mean of `name` over candidates: `composite` runs 2–17, a criterion
    1–5, a flag is the share of candidates with it set (0–1).

    Raises:
        KeyError: `name` is neither `composite` nor one of `SCORE_NAMES`.
    """
    if name == "composite":
        return Scale(*COMPOSITE_RANGE)
    found = levels(name)
    return Scale(found[0], found[-1], "share" if name in FLAGS else "points")


_WORD = re.compile(r"[\w'’-]+")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
# A list or heading marker at the start ("- ", "3.", "2)"; not a decimal such as "2.5"),
# or Markdown emphasis or code anywhere.
_MARKUP = re.compile(r"^\s*(?:[-*•#>]|\d+[.)](?!\d))|\*\*|`|__")
_PLACEHOLDER = re.compile(r"\[[^\]]*\]|\{[^}]*\}|<[^>]*>")


@dataclass(frozen=True)
class Level:
    score: int
    definition: str
    example_scenario: str
    example_tip: str


@dataclass(frozen=True)
class Criterion:
    name: str
    question: str
    levels: tuple[Level, ...]


@dataclass(frozen=True)
class Flag:
    name: str
    definition: str
    rule: str


@dataclass(frozen=True)
class Rubric:
    """A pinned rubric: what each level of each criterion means, with calibrated examples."""

    id: str
    title: str
    instructions: str
    criteria: tuple[Criterion, ...]
    flags: tuple[Flag, ...]
    max_words: int
    max_sentences: int
    min_words: int
    composite_formula: str

    def word_count(self, tip: str) -> int:
        return len(_WORD.findall(tip))

    def format_ok(self, tip: str) -> int:
        """1 if the tip is one plain-text line of at most `max_sentences` sentences."""
        text = tip.strip()
        if not text or "\n" in text or _MARKUP.search(text) or _PLACEHOLDER.search(text):
            return 0
        if self.word_count(text) < self.min_words:
            return 0
        sentences = len(_SENTENCE_END.findall(text)) or 1
        return int(sentences <= self.max_sentences)

    def overlong(self, tip: str) -> int:
        """1 if the tip has more than `max_words` words."""
        return int(self.word_count(tip) > self.max_words)

    def text(self) -> str:
        """The rubric as one Markdown document: stored with every run, shown to judges."""
        lines = [f"# Rubric {self.id}: {self.title}", "", self.instructions.strip(), ""]
        for criterion in self.criteria:
            lines += [f"## {criterion.name} (1-5)", "", criterion.question.strip(), ""]
            for level in criterion.levels:
                lines.append(f"- **{level.score}**: {level.definition.strip()}")
                lines.append(
                    f'  - example ({level.example_scenario}): "{level.example_tip.strip()}"'
                )
            lines.append("")
        lines += ["## Flags (0/1)", ""]
        for flag in self.flags:
            lines.append(f"- **{flag.name}**: {flag.definition.strip()} Rule: {flag.rule.strip()}")
        lines += ["", "## Composite", "", self.composite_formula.strip(), ""]
        return "\n".join(lines)


def composite(
    relevance: float, actionability: float, tone: float, format_ok: float, overlong: float
) -> float:
    """`relevance + actionability + tone + 2·format_ok − overlong`, in the range 2–17."""
    return relevance + actionability + tone + 2 * format_ok - overlong
