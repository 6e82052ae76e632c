"""Parsing candidates out of whatever a small model answers."""

from __future__ import annotations

import json
import random
import re

from tipbench.collect import (
    REST_MARK,
    AnswerDone,
    TipWords,
    parse_answer,
    parse_tips,
    tip_pattern,
    tips_schema,
)
from tipbench.collect._parse import CUT_REST_MARK, with_rest
from tipbench.suite import load_suite


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
    pattern = tips["items"]["pattern"]
    assert pattern == tip_pattern(TipWords.of(load_suite().rubric))
    for tip in (
        "Block 25 minutes now for the chapter 3 draft.",
        "Take your 30-minute walk this morning while you still feel fresh.",
        "Plan the week's dinners (all of them) before Friday; you save 20% that way!",
    ):
        assert re.match(pattern, tip), tip
    for tip in (
        "...",
        "Call mom.",  # three words: under the rubric's four
        "Sofia: 11:22:14.",  # a run of times, as SmolLM2 repeated them to the token limit
        "Walk at 9, 10 and 11 today.",  # a third number
        "Rest " + "now " * 30 + "please.",  # 32 words: overlong
        "do it now, today.",  # not a capital first
    ):
        assert not re.match(pattern, tip), tip
    json.dumps(schema)  # serialisable for every backend


WORDS = ["walk", "(daily)", "the", "dentist's", "well-known", "email,", "call;", "plan:", "Sofia"]
NUMBERS = ["25", "3", "20%", "30-minute", "(1900)", "7,"]


def test_a_constrained_tip_is_never_overlong_and_always_parses() -> None:
    """Tips built as the pattern allows them (seeded, every shape: no number, one, two; from
    the fewest words to the most) match it, hold the rubric's words and are read back."""
    rubric = load_suite().rubric
    words = TipWords.of(rubric)
    pattern = re.compile(tip_pattern(words))
    rng = random.Random(46)
    half, third = (words.most - 2) // 2, (words.most - 3) // 3
    shapes = [[words.most - 1], [half, half], [third, third, third]]
    for _ in range(600):
        stretches = rng.choice(shapes)
        counts = [rng.randint(0, most) for most in stretches]
        body: list[str] = []
        for number, count in enumerate(counts):
            if number:
                body.append(rng.choice(NUMBERS))
            body += [rng.choice(WORDS) for _ in range(count)]
        tip = " ".join(["Start", *body]) + rng.choice(".!")
        if not words.least <= rubric.word_count(tip):
            assert not pattern.match(tip), tip
            continue
        assert pattern.match(tip), tip
        assert rubric.word_count(tip) <= words.most and not rubric.overlong(tip)
        assert rubric.format_ok(tip), tip
        answer = json.dumps({"tips": [tip, tip]})
        assert parse_tips(answer, 2).tips == (tip, tip)


def test_one_tip_per_line_under_a_preamble() -> None:
    text = (
        "Sure! Here are 3 tips for Maya:\n\n"
        "Start the chapter draft at 9 before email.\n"
        "Call the dentist during lunch today.\n"
        "Pack the gym bag tonight for tomorrow.\n\nGood luck!"
    )
    parsed = parse_tips(text, 3)
    assert parsed.tips == (
        "Start the chapter draft at 9 before email.",
        "Call the dentist during lunch today.",
        "Pack the gym bag tonight for tomorrow.",
    )
    assert parsed.method == "plain-lines"


def test_labels_and_bold_are_not_part_of_the_tip() -> None:
    text = "1. **Focus:** Start the chapter draft at 9.\n2. **Call the dentist at noon.**"
    assert parse_tips(text, 2).tips == (
        "Start the chapter draft at 9.",
        "Call the dentist at noon.",
    )
    lines = "Tip 1: Start the chapter draft at 9.\nTip 2: Call the dentist at noon today."
    assert parse_tips(lines, 2).tips == (
        "Start the chapter draft at 9.",
        "Call the dentist at noon today.",
    )


def test_the_reading_with_the_most_tips_wins() -> None:
    text = (
        '{"tips": ["Start the report now."]}\n- Draft the intro now.\n- Walk for 10 minutes at 5.'
    )
    parsed = parse_tips(text, 3)
    assert parsed.tips == ("Draft the intro now.", "Walk for 10 minutes at 5.")
    assert parsed.method == "lines"


def test_placeholders_times_and_runaways_are_not_tips() -> None:
    text = '{"tips": ["...", "*", "10:50 AM", "' + "JSON " * 100 + '", "Call Anne before lunch."]}'
    assert parse_tips(text, 5).tips == ("Call Anne before lunch.",)


def test_json_cut_off_after_a_preamble() -> None:
    text = 'Here is the JSON:\n{"tips": ["Finish the quiz notes first.", "Call the dent'
    parsed = parse_tips(text, 3)
    assert parsed.tips == ("Finish the quiz notes first.",)
    assert parsed.method == "partial-json"


def test_an_answer_is_complete_once_its_last_wanted_tip_has_ended() -> None:
    listed = "Here you go:\n1. Draft the report outline before lunch today.\n2. Call the dentist"
    assert not AnswerDone(2)(listed)  # the second line may go on
    assert AnswerDone(2)(listed + " at nine tomorrow.\n")
    assert not AnswerDone(3)(listed + " at nine tomorrow.\n")

    as_json = '{"tips": ["Draft the report outline before lunch today.", "Call the dentist'
    assert not AnswerDone(2)(as_json)  # the string is still open
    assert AnswerDone(2)(as_json + ' at nine tomorrow."')
    # a line cut inside a quotation is not read as a finished line
    quoted = '1. Draft the "quarterly" report outline today.\n2. Say "'
    assert not AnswerDone(2)(quoted)


def test_completeness_is_checked_again_only_when_a_tip_may_have_ended() -> None:
    complete = AnswerDone(1)
    text = "1. Draft the report outline"
    assert not complete(text)
    assert not complete(text + " before lunch")  # no newline or quote since: not parsed
    assert complete(text + " before lunch today.\n")


def test_an_answer_that_ran_away_is_done_without_its_tips() -> None:
    # one string or line longer than any tip can be: more tokens cannot make it usable
    looping = '{"tips": ["' + "20 minutes of walking, " * 40
    assert AnswerDone(5)(looping)
    walks = ", ".join(f"{n} minutes of walking" for n in range(10, 20))
    assert not AnswerDone(5)('{"tips": ["' + walks)  # long, but not yet longer than a tip
    assert AnswerDone(5)("Said: " * 200)
    # a loop: one phrase three times over at the end, as SmolLM2 wrote on a server
    assert AnswerDone(5)("This is the JSON JSON JSON ")
    assert AnswerDone(5)("Hi Harold.\n" + "You will do it in a bit of time. " * 3)
    assert not AnswerDone(5)("This is the JSON JSON ")
    assert not AnswerDone(5)("| Time | Tip | Task |\n|---|---|---|")  # no letter: not a loop
    # a run of strings that are not tips: times, numbers, placeholders
    times = '{"tips": [' + ", ".join(f'"{h}:00 PM"' for h in range(8, 24))
    assert AnswerDone(5)(times + ", ")
    assert not AnswerDone(5)('{"tips": ["...", "10:50 AM", "14:30 PM", ')
    # what stopped is parsed as usual: the caller sees it is not usable and retries
    assert parse_tips(times, 5).tips == ()


def test_a_free_answer_and_its_constrained_rest_read_as_one_answer() -> None:
    free = "Here you go:\n1. Put the phone in another room.\n2. Start with the hardest task.\n"
    rest = '{"tips": ["Take a short walk after lunch.", "Drink a glass of water."]}'
    joined = with_rest(free, rest)
    assert REST_MARK in joined and joined.startswith(free) and joined.endswith(rest)
    parsed = parse_answer(joined, 3)
    assert parsed.tips == (
        "Put the phone in another room.",
        "Start with the hardest task.",
        "Take a short walk after lunch.",
    )  # the free answer's tips first, then as many of the rest's as were missing
    assert parsed.method == "lines"
    assert parse_answer(free, 3) == parse_tips(free, 3)  # one answer: read as ever
    assert parse_answer(with_rest(free, rest), 2).tips == parse_tips(free, 2).tips


def test_a_line_an_answer_was_cut_off_in_is_no_tip() -> None:
    whole = "1. Put the phone in another room.\n2. Start with the hardest task first.\n"
    cut = whole + "3. Plan the week on Monday morning and then"
    assert len(parse_tips(cut, 3).tips) == 3  # the model ended it: its last line is a tip
    assert parse_tips(cut, 3, cut=True).tips == parse_tips(whole, 3).tips  # stopped: it is not
    assert parse_tips("1. Plan the week on Monday morning", 3, cut=True).tips == ()
    # a JSON string left open never counts; closed ones do, newline or not
    json_cut = '{"tips": ["Put the phone in another room.", "Start with the hardest task'
    assert parse_tips(json_cut, 3, cut=True) == parse_tips(json_cut, 3)
    assert len(parse_tips(json_cut, 3, cut=True).tips) == 1
    # the cell's text says the free answer was cut off: read back as it was counted
    rest = '{"tips": ["Take a short walk after lunch."]}'
    joined = with_rest(cut, rest, cut=True)
    assert REST_MARK not in joined and CUT_REST_MARK in joined
    assert parse_answer(joined, 3).tips == (
        "Put the phone in another room.",
        "Start with the hardest task first.",
        "Take a short walk after lunch.",
    )
    assert parse_answer(cut, 3, cut=True) == parse_tips(cut, 3, cut=True)
