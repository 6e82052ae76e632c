"""Parsing candidates out of whatever a small model answers."""

from __future__ import annotations

import json
import re

from tipbench.collect import parse_tips, tips_schema
from tipbench.collect._parse import TIP_PATTERN


def test_json_object_with_tips() -> None:
    parsed = parse_tips('{"tips": ["Start the report now.", "Email Sam by noon."]}', 5)
    assert parsed.tips == ("Start the report now.", "Email Sam by noon.")
    assert parsed.method == "json"


def test_fenced_json_list_is_capped_at_n_tips() -> None:
    text = '```json\n["One tip here.", "Two tip here.", "Three tip here."]\n```'
    assert parse_tips(text, 2).tips == ("One tip here.", "Two tip here.")


def test_truncated_json_keeps_complete_strings() -> None:
    text = '{"tips": ["Finish the quiz notes first.", "Call the dentist before 9.", "Pack the'
    parsed = parse_tips(text, 5)
    assert parsed.tips == ("Finish the quiz notes first.", "Call the dentist before 9.")
    assert parsed.method == "partial-json"


def test_numbered_and_bulleted_lines() -> None:
    text = "Here you go:\n1. Draft the intro now.\n2) Review PR 42 after lunch.\n- Walk at 5."
    parsed = parse_tips(text, 5)
    assert parsed.tips == ("Draft the intro now.", "Review PR 42 after lunch.", "Walk at 5.")
    assert parsed.method == "lines"


def test_prose_is_unparsable() -> None:
    assert parse_tips("I am a helpful assistant and I like tips.", 3).tips == ()


def test_schema_asks_for_exactly_n_sentences() -> None:
    schema = tips_schema(4)
    tips = schema["properties"]["tips"]
    assert tips["minItems"] == tips["maxItems"] == 4
    assert re.match(TIP_PATTERN, "Block 25 minutes now for the chapter 3 draft.")
    assert not re.match(TIP_PATTERN, "...")
    json.dumps(schema)  # serialisable for every backend
