"""What makes the automatic judge cheaper without changing its judgments: the answer ends
after the criteria, a model's runs come scenario by scenario, and the rubric every request
shares is read while the judge says it is loading.

The answer format is checked on the real SmolLM2-135M: asked for the whole object the prompt
describes, and with the criteria alone, it gives the same criteria.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.ollama_server import FakeOllama, ModelEntry
from tipbench._progress_events import ModelLoading, StepDone, TotalKnown, read_event
from tipbench.auto_judge import judge_messages, parse_scores, score_schema
from tipbench.auto_judge._judge import JUDGE_N_CTX
from tipbench.auto_judge._requests import judge_request, judging_order
from tipbench.backends import BackendOptions, GenerationRequest, ModelSpec, open_backend
from tipbench.collect import CollectConfig, collect
from tipbench.suite import CRITERIA, SCORE_NAMES, levels, load_suite
from tipbench.tracking import CellRun

WRITER, JUDGE = "qwen2.5:0.5b", "gemma3:1b"


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    """Ollama's API on loopback (see `support.ollama_server`): a writer and a judge."""
    models = {
        WRITER: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M"),
        JUDGE: ModelEntry(parameter_count=999_885_952, parameter_size="999.89M"),
    }
    with FakeOllama(models) as fake:
        yield fake


def test_the_schema_asks_for_the_criteria_alone_in_the_answer_formats_order() -> None:
    schema = score_schema()
    assert list(schema["properties"]) == list(CRITERIA) == schema["required"]
    assert all(schema["properties"][n]["enum"] == list(levels(n)) for n in CRITERIA)
    assert schema["additionalProperties"] is False
    # the prompt still describes the whole object, criteria first: what calibrations saw
    system = judge_messages(load_suite().rubric.text(), {}, {"text": "x"})[0][1]
    answer_format = system[system.index('{"relevance"') :].splitlines()[0]
    assert [name for name in SCORE_NAMES if name in answer_format] == list(SCORE_NAMES)
    assert answer_format.index("tone") < answer_format.index("format_ok")


def test_a_models_runs_come_scenario_by_scenario() -> None:
    runs = [
        CellRun(model, prompt, scenario, name=f"{model}|{prompt}|{scenario}")
        for model in ("m2", "m1")
        for prompt in ("v2", "v1")
        for scenario in ("s2", "s1")
    ]
    ordered = [(r.model, r.scenario_id, r.prompt_version) for r in judging_order(runs)]
    assert ordered == [
        ("m1", "s1", "v1"), ("m1", "s1", "v2"), ("m1", "s2", "v1"), ("m1", "s2", "v2"),
        ("m2", "s1", "v1"), ("m2", "s1", "v2"), ("m2", "s2", "v1"), ("m2", "s2", "v2"),
    ]  # fmt: skip


def test_the_judge_says_it_is_loading_until_its_model_is_ready(
    server: FakeOllama, sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    """The job card's "loading the judge model": a `loading` event before the first
    candidate, and its end before the first step; candidates scenario by scenario."""
    config = CollectConfig(
        models=[f"ollama:{WRITER}"], prompts=["v1", "v2-mentor"], n_scenarios=2, n_tips=2,
        ollama_url=server.url, experiment=experiment,
    )  # fmt: skip
    assert collect(config, tracking_uri=sqlite_uri).exit_code == 0
    events_file = tmp_path / "events.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "judge", "auto", "--experiment", experiment,
         "--judge-model", f"ollama:{JUDGE}", "--ollama-url", server.url,
         "--tracking-uri", sqlite_uri],
        capture_output=True, text=True, timeout=600,
        env=os.environ | {"TIPBENCH_PROGRESS_EVENTS": str(events_file)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr

    events = [read_event(line) for line in events_file.read_text().splitlines()]
    kinds = [type(event).__name__ for event in events]
    assert kinds[:3] == ["TotalKnown", "ModelLoading", "ModelLoading"]
    assert kinds[3:] == ["StepDone"] * 8 + ["Finished"]
    assert isinstance(events[0], TotalKnown) and events[0].total == 8
    loading, ready = events[1], events[2]
    assert isinstance(loading, ModelLoading) and isinstance(ready, ModelLoading)
    assert (loading.model, loading.loading, ready.loading) == (f"ollama:{JUDGE}", True, False)
    assert loading.unit == "candidates"
    steps = [event.item for event in events if isinstance(event, StepDone)]
    scenarios = [re.split(r"[| ]", item)[2] for item in steps]
    first = scenarios[0]
    assert scenarios == [first] * 4 + [s for s in scenarios if s != first]  # grouped
    prompts = [re.split(r"[| ]", item)[1] for item in steps[:4]]
    assert prompts == ["v1", "v1", "v2-mentor", "v2-mentor"]


WHOLE_ANSWER: dict[str, Any] = {
    "type": "object",
    "properties": {n: {"type": "integer", "enum": list(levels(n))} for n in SCORE_NAMES},
    "required": list(SCORE_NAMES),
    "additionalProperties": False,
}  # the answer format's whole object, as the judge's schema asked before


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_criteria_are_those_of_the_whole_answer_in_fewer_tokens() -> None:
    """On the real embedded judge, for calibration tips of every level, at temperature 0
    and at the retries' temperature: the answer that ends after the criteria has the
    criteria of the whole object the prompt asks for, in fewer tokens."""
    suite = load_suite()
    assert suite.calibration is not None
    tips = suite.calibration.tips[::6]  # levels 1-5 of several criteria
    backend = open_backend(
        ModelSpec.parse("llamacpp:smollm2-135m"), BackendOptions(n_ctx=JUDGE_N_CTX)
    )
    short_tokens = whole_tokens = 0
    with backend:
        for tip in tips:
            candidate = {"text": tip.text, "format_ok": 1, "overlong": 0}
            messages = judge_messages(suite.rubric.text(), tip.scenario.context(), candidate)
            for temperature, seed in ((0.0, 42), (0.3, 43)):
                whole = backend.generate(
                    GenerationRequest(messages, temperature, seed, 64, WHOLE_ANSWER)
                )
                short = backend.generate(judge_request(messages, "schema", temperature, seed))
                a, b = parse_scores(whole.text), parse_scores(short.text)
                assert a is not None and b is not None, (whole.text, short.text)
                assert (a.relevance, a.actionability, a.tone) == (
                    b.relevance, b.actionability, b.tone,
                ), (whole.text, short.text)  # fmt: skip
                assert set(json.loads(short.text)) == set(CRITERIA)
                short_tokens += short.completion_tokens
                whole_tokens += whole.completion_tokens
    assert short_tokens < 0.7 * whole_tokens
