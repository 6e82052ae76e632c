"""Parse a model's answer into candidate tips.

Small models asked for JSON answer in many shapes, more so when nothing constrains them:
a JSON object or list (possibly fenced or cut off by the token limit), a numbered or
bulleted list, or one tip per line under a short preamble. Every reading is tried; the
first that finds the wanted number of tips wins, else the one that finds the most.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tipbench.suite import Rubric, load_suite

ParseMethod = Literal["json", "partial-json", "lines", "plain-lines", "none"]

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LIST_ITEM = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•+])\s+(.+?)\s*$")
_KEYS = frozenset({"tips", "tip", "text"})
# A label in front of a tip: "Tip 2:", "**Morning:**", "Tip:".
_LABEL = re.compile(r"^(?:\*\*[^*]{1,40}\*\*:?|(?:tip|step)\s*\d*\s*[:.)-])\s*", re.IGNORECASE)
# Lines that introduce or close an answer rather than being a tip.
_CHATTER = re.compile(
    r"^(?:sure|certainly|of course|okay|ok|here(?: are|'s| is)|i hope|good luck|remember)\b",
    re.IGNORECASE,
)
# One tip per line counts only with at least this many lines: a lone line of prose is no list.
_MIN_PLAIN_LINES = 2
_MIN_TIP_WORDS = 3
# Longer than this is a runaway answer, not one tip (the prompts ask for at most 25 words).
_MAX_TIP_CHARS = 400
# A free answer has run away when this much follows its last quote or newline (twice the
# longest tip: room for a long preamble), or when this many non-tips per wanted tip came.
_RUNAWAY_CHARS = 2 * _MAX_TIP_CHARS
_JUNK_PER_TIP = 3
# A free answer is looping when it ends in the same phrase (of a letter or digit, at least
# `_LOOP_UNIT` characters up to a tip's length) `_LOOP_TIMES` times over: "JSON JSON JSON ",
# "You will do it in a bit of time. " thrice.
_LOOP_UNIT = 4
_LOOP_TIMES = 3


@dataclass(frozen=True)
class TipWords:
    """How many words a tip may have: the rubric's `min_words` (below it a tip is not
    `format_ok`) to its `max_words` (above it a tip is `overlong`)."""

    least: int
    most: int

    @classmethod
    def of(cls, rubric: Rubric) -> TipWords:
        return cls(rubric.min_words, rubric.max_words)


@functools.cache
def bundled_tip_words() -> TipWords:
    """The bundled suite's rubric's: what a grid of the bundled suite asks for."""
    return TipWords.of(load_suite().rubric)


# The words of a constrained tip, each counted as the rubric counts words (a run of letters,
# digits, apostrophes and hyphens) with its punctuation: the first word capitalised, a word
# of letters, or a number of at most four digits ("25", "20%", "30-minute").
_FIRST = r"[A-Z][A-Za-z'-]{0,15}[,;:]?"
_WORD = r" [(]?[A-Za-z][A-Za-z'-]{0,15}[)]?[,;:]?"
_NUMBER = r" [(]?[0-9]{1,4}(%|-[a-z]{1,10})?[)]?[,;:]?"


def tip_pattern(words: TipWords) -> str:
    """One sentence of `words.least` to `words.most` words that starts with a word and holds
    at most two numbers.

    A model that repeats itself under the schema is stopped at the end of a tip's words, not
    at the token limit, as SmolLM2's answers were when it repeated a phrase or a run of
    times ("14: 14: 14: …": a digit is a token): every tip ends within the rubric's word
    limit, so under the schema a tip is never `overlong`. Numbers are what cost tokens, so
    the words around a number share the limit: with one number at most `(most − 2) // 2`
    words on each side of it, with two at most `(most − 3) // 3` in each of the three
    stretches; each stretch may be short as long as the tip has its `least` words.
    """
    shapes = []
    for numbers in range(3):
        cap = (words.most - 1 - numbers) // (numbers + 1)
        need = max(words.least - 1 - numbers, 0)
        for least in _spreads(need, numbers + 1, cap):
            stretches = [f"({_WORD}){{{n},{cap}}}" for n in least]
            shapes.append(_NUMBER.join(stretches))
    return f"^{_FIRST}({'|'.join(shapes)})[.!]$"


def _spreads(total: int, parts: int, cap: int) -> list[tuple[int, ...]]:
    """Every way to spread `total` over `parts` (each at most `cap`): the fewest words each
    stretch must have so that a tip has its `least` words wherever its numbers stand."""
    if parts == 1:
        return [(total,)] if total <= cap else []
    return [
        (first, *rest)
        for first in range(min(total, cap) + 1)
        for rest in _spreads(total - first, parts - 1, cap)
    ]


def tips_schema(n_tips: int, words: TipWords | None = None) -> dict[str, Any]:
    """The JSON schema a structured request constrains the answer to: `n_tips` tips of
    `words` (by default the bundled rubric's) each."""
    pattern = tip_pattern(words or bundled_tip_words())
    return {
        "type": "object",
        "properties": {
            "tips": {
                "type": "array",
                "items": {"type": "string", "pattern": pattern},
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


def parse_tips(text: str, n_tips: int, cut: bool = False) -> ParsedTips:
    """The first `n_tips` tips found in `text`, and how they were found.

    Readings are tried in order (JSON, truncated JSON, a numbered or bulleted list, one tip
    per line); the first that yields `n_tips` tips wins, else the one that yields the most.
    Only strings of a few words count as tips: not "...", a time or a number. `cut`: the
    answer was stopped before the model ended it (at its token limit, or by `AnswerDone` as
    run away), so a line it was still writing is no tip: the list readings then read up to
    its last newline, as `AnswerDone` does (an unclosed JSON string never counts).
    """
    lines = text[: max(text.rfind("\n"), 0)] if cut else text
    return _best(text, lines, n_tips, _READINGS)


#: Between a free answer and the constrained answer that completed it, in a cell's text
#: (`collect/_answer.py`); the second when the free answer was cut off (`parse_tips`).
REST_MARK = "\n\n--- the missing tips, asked with the schema ---\n"
CUT_REST_MARK = "\n\n--- cut off here; the missing tips, asked with the schema ---\n"


def with_rest(free: str, rest: str, cut: bool = False) -> str:
    """A cell's text: its free answer (`cut` off or not), then the constrained answer of its
    missing tips."""
    return f"{free}{CUT_REST_MARK if cut else REST_MARK}{rest}"


def parse_answer(text: str, n_tips: int, cut: bool = False) -> ParsedTips:
    """The first `n_tips` tips of a cell's text: of one answer (`parse_tips`, `cut` off or
    not), or of a free answer and the constrained rest that completed it (`with_rest`, whose
    mark says whether the free answer was cut off): the free answer's tips, then the rest's,
    read as the method of the free answer."""
    for mark in (CUT_REST_MARK, REST_MARK):
        free, found, rest = text.partition(mark)
        if found:
            break
    else:
        return parse_tips(text, n_tips, cut)
    first = parse_tips(free, n_tips, cut=mark == CUT_REST_MARK)
    more = parse_tips(rest, n_tips - len(first.tips)) if len(first.tips) < n_tips else None
    return ParsedTips(first.tips + (more.tips if more else ()), first.method)


class AnswerDone:
    """Whether a growing free (unconstrained) answer needs no more tokens: the test its
    generation stops on, instead of running on to the token limit.

    It is done when it holds `n_tips` complete tips, as a JSON answer or a numbered or
    bulleted list (loose lines may be a preamble that a list follows): a tip is complete once
    its JSON string is closed or its list line has ended, so the JSON readings look at the
    answer up to its last quote and the list reading up to its last newline. It is also done
    when it has run away, as small models do, so that more tokens cannot make it usable:
    more than `_RUNAWAY_CHARS` since the last quote or newline (no tip is that long),
    `_JUNK_PER_TIP` × `n_tips` strings or list lines that are not tips (a run of "1:1", times
    or "..."), or a loop: the same phrase `_LOOP_TIMES` times over at its end. The caller
    then parses what there is, and retries if it is not usable.

    Called on every streamed token, it parses again only when a quote or newline was added.
    """

    def __init__(self, n_tips: int) -> None:
        self.n_tips = n_tips
        self._checked = (-1, -1)  # (last quote, last newline) already parsed

    def __call__(self, text: str) -> bool:
        quote, newline = text.rfind('"'), text.rfind("\n")
        if len(text) - 1 - max(quote, newline) > _RUNAWAY_CHARS or _loops(text):
            return True
        if (quote, newline) == self._checked:
            return False
        self._checked = (quote, newline)
        parts = ((text[: quote + 1], _JSON_READINGS), (text[: max(newline, 0)], _LIST_READINGS))
        for part, readings in parts:
            body = _body(part)
            for _, read in readings:
                items = [_clean(item) for item in read(body)]
                tips = sum(_tip_like(item) for item in items)
                if tips >= self.n_tips or len(items) - tips >= _JUNK_PER_TIP * self.n_tips:
                    return True
        return False


def _loops(text: str) -> bool:
    """Whether `text` ends in one phrase `_LOOP_TIMES` times over (see `AnswerDone`)."""
    last = text[-1:]
    for size in range(_LOOP_UNIT, min(_MAX_TIP_CHARS, len(text) // _LOOP_TIMES) + 1):
        if text[-1 - size] != last:  # cheap first: the phrase ends where the text does
            continue
        unit = text[-size:]
        if text.endswith(unit * _LOOP_TIMES) and any(c.isalnum() for c in unit):
            return True
    return False


def _best(text: str, lines: str, n_tips: int, readings: tuple[_Reading, ...]) -> ParsedTips:
    """The best of `readings`: the JSON ones of `text`, the others of `lines`."""
    bodies = {"json": _body(text), "lines": _body(lines)}
    best = ParsedTips((), "none")
    for method, read in readings:
        body = bodies["json" if method in _JSON_METHODS else "lines"]
        tips = tuple(t for t in (_clean(x) for x in read(body)) if _tip_like(t))[:n_tips]
        if len(tips) > len(best.tips):
            best = ParsedTips(tips, method)
        if len(best.tips) >= n_tips:
            break
    return best


def _body(text: str) -> str:
    """The answer without surrounding space and code fences."""
    return _FENCE.sub("", text.strip())


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
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        return []
    body = body[start:]
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


def _from_plain_lines(body: str) -> list[str]:
    """One tip per line, without the preamble, headings and JSON punctuation around them."""
    found = []
    for line in body.splitlines():
        text = _clean(_clean(line).rstrip(","))
        if (
            not _tip_like(text)
            or text.endswith(":")
            or text.startswith(("#", "{", "}", "[", "]"))
            or _CHATTER.match(text)
        ):
            continue
        found.append(text)
    return found if len(found) >= _MIN_PLAIN_LINES else []


def _tip_like(text: str) -> bool:
    return (
        len(text.split()) >= _MIN_TIP_WORDS
        and len(text) <= _MAX_TIP_CHARS
        and any(c.isalpha() for c in text)
    )


def _clean(tip: str) -> str:
    text = " ".join(tip.split()).strip("\"'“”‘’ ")
    if text.startswith("**") and text.count("**") == 2 and text.endswith("**"):
        return text.strip("* ")  # a whole tip in bold
    return _LABEL.sub("", text).strip("\"'“”‘’ ")


_Reading = tuple[ParseMethod, Callable[[str], list[str]]]
_JSON_READINGS: tuple[_Reading, ...] = (("json", _from_json), ("partial-json", _from_partial_json))
_LIST_READINGS: tuple[_Reading, ...] = (("lines", _from_lines),)
_READINGS = _JSON_READINGS + _LIST_READINGS + (("plain-lines", _from_plain_lines),)
_JSON_METHODS = frozenset(method for method, _ in _JSON_READINGS)
