"""The bundled `tips` suite, the loader's validation and the rubric's deterministic rules."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tipbench import ConfigError, SuiteError
from tipbench.suite import (
    COMPOSITE_RANGE,
    CRITERIA,
    FLAGS,
    Suite,
    bundled_suite_path,
    composite,
    load_suite,
)

SCENARIO_IDS = [
    "student-morning",
    "student-evening",
    "engineer-morning",
    "engineer-evening",
    "parent-morning",
    "parent-evening",
    "retiree-morning",
    "retiree-evening",
]
PROMPT_VERSIONS = ["v1", "v2-mentor", "v3-few-shot"]
# SmolLM2-135M has a small context: the rendered system + user prompt must leave room for the
# answer. ~4 characters per token, so 1800 characters is about 450 tokens.
MAX_PROMPT_CHARS = 1800
COMPOSITE_FORMULA = (
    "composite = relevance + actionability + tone + 2·format_ok − overlong (range 2–17)"
)


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite()


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled suite, for breaking one file at a time."""
    folder = tmp_path / "tips"
    shutil.copytree(bundled_suite_path(), folder)
    return folder


def edit(file: Path, old: str, new: str) -> None:
    text = file.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {file}: the test no longer edits anything"
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def refused(folder: Path) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(folder)
    return str(info.value)


# --- the bundled suite -------------------------------------------------------------------


def test_bundled_suite_is_the_default(suite: Suite) -> None:
    assert suite.name == "tips"
    assert suite.version == "1.0.0"
    assert suite.label == "tips@1.0.0"
    assert suite.path == bundled_suite_path()
    assert suite.rubric.id == "tip-v1"
    assert suite.default_prompts == tuple(PROMPT_VERSIONS)
    assert sorted(suite.prompts) == sorted(PROMPT_VERSIONS)


def test_eight_scenarios_in_persona_major_order(suite: Suite) -> None:
    assert [s.id for s in suite.scenarios] == SCENARIO_IDS
    assert [s.id for s in load_suite(bundled_suite_path()).scenarios] == SCENARIO_IDS
    morning, evening = suite.scenario("student-morning"), suite.scenario("student-evening")
    assert (morning.local_time, evening.local_time) == ("07:30", "19:30")
    assert morning.tasks == evening.tasks


def test_each_persona_has_its_own_concrete_task_list(suite: Suite) -> None:
    task_lists = {s.persona: s.tasks for s in suite.scenarios}
    assert set(task_lists) == {"student", "engineer", "parent", "retiree"}
    for persona, tasks in task_lists.items():
        assert 4 <= len(tasks) <= 6, persona
        # Concrete: most tasks carry a deadline, a clock time or a duration.
        timed = [t for t in tasks if re.search(r"\d|day\b|tomorrow|before", t)]
        assert len(timed) >= len(tasks) - 1, persona
    assert len({tasks for tasks in task_lists.values()}) == 4


def test_content_hashes_are_stable_across_loads(suite: Suite) -> None:
    again = load_suite()
    assert [s.content_hash for s in again.scenarios] == [s.content_hash for s in suite.scenarios]
    assert again.hash == suite.hash
    assert len({s.content_hash for s in suite.scenarios}) == len(suite.scenarios)


def test_changing_a_task_changes_that_personas_hashes(suite: Suite, suite_copy: Path) -> None:
    edit(suite_copy / "scenarios.yaml", "(5 minutes)", "(10 minutes)")
    changed = load_suite(suite_copy)
    before = {s.id: s.content_hash for s in suite.scenarios}
    after = {s.id: s.content_hash for s in changed.scenarios}
    differ = {sid for sid in before if before[sid] != after[sid]}
    assert differ == {"student-morning", "student-evening"}
    assert changed.hash != suite.hash


@pytest.mark.parametrize("n", range(len(SCENARIO_IDS) + 2))
def test_n_scenarios_takes_the_same_first_n(suite: Suite, n: int) -> None:
    expected = SCENARIO_IDS if n == 0 else SCENARIO_IDS[:n]
    assert [s.id for s in suite.select_scenarios(n)] == expected
    assert [s.id for s in load_suite().select_scenarios(n)] == expected


def test_negative_n_scenarios_is_refused(suite: Suite) -> None:
    with pytest.raises(ConfigError, match="n_scenarios"):
        suite.select_scenarios(-1)


# --- prompt versions ---------------------------------------------------------------------


@pytest.mark.parametrize("version", PROMPT_VERSIONS)
@pytest.mark.parametrize("n_tips", [3, 5])
def test_prompt_renders_every_scenario(suite: Suite, version: str, n_tips: int) -> None:
    prompt = suite.prompt(version)
    for scenario in suite.scenarios:
        messages = prompt.render(scenario, n_tips)
        assert [role for role, _ in messages] == ["system", "user"]
        text = "\n".join(content for _, content in messages)
        assert "$" not in text
        assert f"exactly {n_tips} tips" in text
        assert "25 words" in text
        assert '{"tips": [' in text
        assert "nothing else" in text
        assert scenario.persona_name in text
        assert scenario.local_time in text
        for task in scenario.tasks:
            assert f"\n- {task}\n" in f"{text}\n"


@pytest.mark.parametrize("version", PROMPT_VERSIONS)
def test_rendered_prompt_fits_the_small_model(suite: Suite, version: str) -> None:
    longest = max(
        sum(len(content) for _, content in suite.prompt(version).render(scenario, 5))
        for scenario in suite.scenarios
    )
    assert longest < MAX_PROMPT_CHARS


def test_few_shot_examples_follow_their_own_rules(suite: Suite) -> None:
    system = suite.prompt("v3-few-shot").system
    answers = [json.loads(a) for a in re.findall(r"^Answer: (\{.*\})$", system, re.MULTILINE)]
    assert 2 <= len(answers) <= 3
    for answer in answers:
        for tip in answer["tips"]:
            assert suite.rubric.format_ok(tip) == 1, tip
            assert suite.rubric.word_count(tip) <= 25, tip
    # The examples are for a made-up persona, never one the suite asks about.
    for scenario in suite.scenarios:
        assert scenario.persona_name not in system


def test_unknown_prompt_version_names_the_known_ones(suite: Suite) -> None:
    with pytest.raises(ConfigError) as info:
        suite.prompt("v4")
    message = str(info.value)
    assert "'v4'" in message
    for version in PROMPT_VERSIONS:
        assert version in message


# --- rubric ------------------------------------------------------------------------------


def test_rubric_text_pins_every_level_with_its_example(suite: Suite) -> None:
    rubric = suite.rubric
    text = rubric.text()
    assert tuple(c.name for c in rubric.criteria) == CRITERIA
    assert tuple(f.name for f in rubric.flags) == FLAGS
    for criterion in rubric.criteria:
        assert f"## {criterion.name} (1-5)" in text
        assert [level.score for level in criterion.levels] == [1, 2, 3, 4, 5]
        for level in criterion.levels:
            assert f"- **{level.score}**: {level.definition}" in text
            assert f'example ({level.example_scenario}): "{level.example_tip}"' in text
    for flag in rubric.flags:
        assert flag.definition in text and flag.rule in text
    assert rubric.composite_formula == COMPOSITE_FORMULA
    assert f"## Composite\n\n{COMPOSITE_FORMULA}" in text


def test_rubric_examples_are_well_formed_tips(suite: Suite) -> None:
    """Criterion examples isolate their criterion: none of them trips a flag."""
    ids = {s.id for s in suite.scenarios}
    for criterion in suite.rubric.criteria:
        for level in criterion.levels:
            assert level.example_scenario in ids
            assert suite.rubric.format_ok(level.example_tip) == 1, level.example_tip
            assert suite.rubric.overlong(level.example_tip) == 0, level.example_tip
    examples = [level.example_tip for c in suite.rubric.criteria for level in c.levels]
    assert len(set(examples)) == len(examples)


def test_rule_thresholds(suite: Suite) -> None:
    rubric = suite.rubric
    assert (rubric.max_words, rubric.max_sentences, rubric.min_words) == (30, 2, 4)


@pytest.mark.parametrize(
    ("tip", "expected"),
    [
        ("Block 25 minutes now for the chapter 3 draft before email.", 1),
        ("Great job today! Jot three bullet points for the demo.", 1),
        ("2.5 hours of writing are left, so start the methods section now.", 1),
        ("- Block 25 minutes now for the chapter 3 draft.", 0),
        ("* Block 25 minutes now for the chapter 3 draft.", 0),
        ("1. Block 25 minutes now for the chapter 3 draft.", 0),
        ("2) Block 25 minutes now for the chapter 3 draft.", 0),
        ("Block **25 minutes** now for the chapter 3 draft.", 0),
        ("Block 25 minutes now\nfor the chapter 3 draft.", 0),
        ("Block 25 minutes now for [task] before [time].", 0),
        ("Spend {duration} on the chapter 3 draft today.", 0),
        ("Open the draft. Write one paragraph. Then stop.", 0),
        ("Do it now.", 0),
        ("   ", 0),
    ],
)
def test_format_ok_rule(suite: Suite, tip: str, expected: int) -> None:
    assert suite.rubric.format_ok(tip) == expected


def test_overlong_rule(suite: Suite) -> None:
    rubric = suite.rubric
    assert rubric.overlong(" ".join(["word"] * 30)) == 0
    assert rubric.overlong(" ".join(["word"] * 31)) == 1
    assert rubric.overlong("Block 25 minutes now for the chapter 3 draft before email.") == 0
    assert rubric.word_count("Take your 20:00 tablet, then walk.") == 7


def test_composite_range() -> None:
    low, high = composite(1, 1, 1, 0, 1), composite(5, 5, 5, 1, 0)
    assert (low, high) == COMPOSITE_RANGE == (2.0, 17.0)
    assert composite(4, 3, 5, 1, 0) == 14


# --- malformed suites are refused, naming the file and the problem --------------------------


def test_missing_file(suite_copy: Path) -> None:
    file = suite_copy / "scenarios.yaml"
    file.unlink()
    message = refused(suite_copy)
    assert str(file) in message and "missing file" in message


def test_missing_suite_folder(tmp_path: Path) -> None:
    message = refused(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in message and "not found" in message


def test_bad_yaml(suite_copy: Path) -> None:
    file = suite_copy / "suite.yaml"
    file.write_text("name: tips\ndefault_prompts: [v1, v2-mentor\n", encoding="utf-8")
    message = refused(suite_copy)
    assert str(file) in message and "bad YAML" in message


def test_unquoted_time_is_refused(suite_copy: Path) -> None:
    file = suite_copy / "scenarios.yaml"
    edit(file, 'local_time: "19:30"', "local_time: 19:30")  # YAML 1.1 reads this as 1170
    message = refused(suite_copy)
    assert str(file) in message and "time_slots.1.local_time" in message


def test_unknown_placeholder(suite_copy: Path) -> None:
    file = suite_copy / "prompts" / "v2-mentor.yaml"
    edit(file, "exactly $n_tips tips", "exactly $n_tips tips in a $mood mood")
    message = refused(suite_copy)
    assert str(file) in message and "unknown placeholder $mood" in message


def test_bad_dollar_sign(suite_copy: Path) -> None:
    file = suite_copy / "prompts" / "v1.yaml"
    edit(file, "Tasks:", "Tasks (budget $ 5):")
    message = refused(suite_copy)
    assert str(file) in message and "invalid '$' placeholder" in message


def test_duplicate_persona_ids(suite_copy: Path) -> None:
    file = suite_copy / "scenarios.yaml"
    edit(file, "id: engineer", "id: student")
    message = refused(suite_copy)
    assert str(file) in message and "duplicate persona id 'student'" in message


def test_rubric_with_a_missing_level(suite_copy: Path) -> None:
    file = suite_copy / "rubrics" / "tip-v1.yaml"
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    del data["criteria"][1]["levels"][2]
    file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    message = refused(suite_copy)
    assert str(file) in message and "criteria.1.levels" in message and "at least 5" in message


def test_rubric_example_for_an_unknown_scenario(suite_copy: Path) -> None:
    file = suite_copy / "rubrics" / "tip-v1.yaml"
    edit(file, "scenario: retiree-morning", "scenario: retiree-noon")
    message = refused(suite_copy)
    assert str(file) in message and "unknown scenario 'retiree-noon'" in message


def test_prompt_version_must_match_its_file_name(suite_copy: Path) -> None:
    file = suite_copy / "prompts" / "v1.yaml"
    renamed = file.with_name("v1-plain.yaml")
    file.rename(renamed)
    message = refused(suite_copy)
    assert str(renamed) in message and "version 'v1' does not match the file name" in message


def test_default_prompt_must_exist(suite_copy: Path) -> None:
    (suite_copy / "prompts" / "v3-few-shot.yaml").unlink()
    message = refused(suite_copy)
    assert str(suite_copy / "suite.yaml") in message and "'v3-few-shot'" in message
