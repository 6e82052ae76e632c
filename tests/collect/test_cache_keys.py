"""The response cache's keys outlive new request fields: a user's cached answers and
remembered probe answers (both keyed by `request_key`) stay theirs after an upgrade."""

from __future__ import annotations

from dataclasses import replace

from tipbench.backends import GenerationRequest
from tipbench.collect._cache import request_key

FREE = GenerationRequest((("system", "s"), ("user", "u")), 0.7, 42, 368)
SCHEMA = GenerationRequest((("user", "u"),), 0.0, 1, 64, {"type": "object"}, True)


def test_a_request_without_a_form_keeps_the_key_it_had_before_forms() -> None:
    # the keys tipbench computed before requests had a form (21ce197)
    assert request_key("m:1", FREE) == "80c84244bca71199"
    assert request_key("m:1", SCHEMA) == "41728f4046b18f70"


def test_a_form_counts_in_the_key_when_set() -> None:
    in_form = replace(SCHEMA, form=('{ "a": ', ("1", "2"), "}"))
    assert request_key("m:1", in_form) != request_key("m:1", SCHEMA)
