"""How `--structured auto` chooses a model's path: by counted tokens, on a probe that is not
the grid's cells, remembered so that a second collect asks nothing; for a model file that
tipbench knows, the path it ships.

The rule's figures are worked out by hand from its cost model (`collect/_path_choice.py`);
a seeded simulation checks that, given enough evidence, it picks the path that generates
fewer token-equivalents. The probe runs against a small scripted backend (a fake, for speed:
the integration tests in `test_paths_reproducible.py` use the real model and server).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

import pytest

from tipbench.backends import (
    Backend,
    BackendOptions,
    Generation,
    GenerationRequest,
    ModelInfo,
    ModelSpec,
    RequestRecord,
    RetryPolicy,
)
from tipbench.collect import _known_paths, parse_answer, plan_grid
from tipbench.collect._answer import answer_cell
from tipbench.collect._cache import request_key
from tipbench.collect._known_paths import shipped_choice
from tipbench.collect._path_choice import FREE_FIRST, SCHEMA_FIRST, Evidence, PathChoice
from tipbench.collect._path_memory import PathMemory, ProbeAnswer
from tipbench.collect._probe import Probe, probe_cells
from tipbench.suite import load_suite

SCENARIOS = load_suite().scenarios
LIST = "1. Block 25 minutes now for the chapter draft.\n2. Put the phone in another room today.\n"
RUNAWAY = "Here is what I think about your day " * 50  # 400 words, no tip


def evidence(free: list[tuple[int, bool | int]], schema: list[int], n_tips: int = 3) -> Evidence:
    """Free answers of (tokens, usable or the tips held of `n_tips`), constrained ones."""
    found = Evidence()
    for tokens, held in free:
        tips = n_tips if held is True else int(held)
        found = found.with_free(tokens, tips, n_tips)
    for tokens in schema:
        found = found.with_schema(tokens)
    return found


def test_free_first_when_the_free_answers_cost_less_than_what_the_usable_ones_save() -> None:
    # 3 usable answers of 80 tokens; a constrained answer of 100 tokens costs 125 free ones:
    # 240 + 100/2 = 290 < 3 × 125 = 375
    assert evidence([(80, True)] * 3, [100]).decide(1.25) == "free-first"
    # 110 tokens each: 330 + 50 = 380 ≥ 375, on a server's grammar cost 380 < 435
    assert evidence([(110, True)] * 3, [100]).decide(1.25) == "schema"
    assert evidence([(110, True)] * 3, [100]).decide(1.45) == "free-first"
    # one failed answer among them: its 40 tokens are wasted and it saves nothing
    assert evidence([(80, True)] * 2 + [(40, False)], [100]).decide(1.25) == "schema"
    # unless it held some tips, which its cell keeps: with two of three, it saves two thirds
    # of a constrained answer: 200 + 50 < (2 + 2/3) × 125 = 333
    assert evidence([(80, True)] * 2 + [(40, 2)], [100]).decide(1.25) == "free-first"
    # no usable answer, but each held two tips: 3 × 40 + 50 = 170 < 3 × 2/3 × 125 = 250
    assert evidence([(40, 2)] * 3, [100]).decide(1.25) == "free-first"
    assert evidence([(90, 2)] * 3, [100]).decide(1.25) == "schema"  # 320 ≥ 250


def test_no_usable_free_answer_means_schema_and_usable_ones_need_a_constrained_answer() -> None:
    assert evidence([(12, False)] * 3, []).decide(1.45) == "schema"
    with pytest.raises(ValueError, match="constrained"):
        evidence([(80, True)], []).decide(1.25)


def test_the_probe_is_settled_once_no_remaining_answer_could_tip_it() -> None:
    # a usable answer of 368 tokens against constrained ones of 82: even two more usable
    # answers of no tokens save 3 × 1.25 × 82 − 41 = 266.5 < 368
    assert evidence([(368, True)], [82]).settled(2, 1.25, 368)
    # one failed answer of 82 tokens: two more could still save (before any constrained
    # answer, its length is bounded by the token budget)
    assert not evidence([(82, False)], []).settled(2, 1.25, 368)
    assert evidence([(300, False), (250, False)], []).settled(1, 1.25, 368)


def test_with_enough_evidence_the_rule_picks_the_path_that_costs_fewer_tokens() -> None:
    """A seeded simulation: cells whose free answers parse with probability p, free answers of
    f ~ U(40, 160) tokens, constrained ones of s ~ U(60, 140) for three tips; a failed free
    answer holds 0, 1 or 2 of its 3 tips and its cell asks constrained tokens for the rest
    only (s × missing / 3); a constrained token costs w. Over 4,000 cells the rule, fed their
    counts, picks the path whose summed cost is lower."""
    rng = random.Random(36)
    for p in (0.2, 0.5, 0.8, 0.95):
        for w in (1.25, 1.45, 1.65):
            cells = [
                (
                    rng.uniform(40, 160),
                    3 if rng.random() < p else rng.randrange(3),
                    rng.uniform(60, 140),
                )
                for _ in range(4000)
            ]
            schema_path = sum(w * s for _, _, s in cells)
            free_first = sum(f + w * s * (3 - tips) / 3 for f, tips, s in cells)
            found = evidence(
                [(round(f), tips) for f, tips, _ in cells], [round(s) for *_, s in cells]
            )
            assert found.decide(w) == ("free-first" if free_first < schema_path else "schema")


def grid(prompts: str, n_scenarios: int) -> list:
    suite = load_suite()
    return plan_grid(
        [(ModelSpec.parse("llamacpp:smollm2-135m"), "identity")],
        [suite.prompt(v) for v in prompts.split(",")],
        suite.select_scenarios(n_scenarios),
        n_tips=2,
        temperature=0.7,
        seed=42,
        max_tokens=176,
        suite=suite.label,
    )


def test_the_probe_asks_the_grids_first_requests_whatever_the_grid_size() -> None:
    small, full = (
        probe_cells(grid("v1,v2-mentor,v3-few-shot", 3), SCENARIOS),
        probe_cells(grid("v1,v2-mentor,v3-few-shot", 8), SCENARIOS),
    )
    assert [c.request() for c in small] == [c.request() for c in full]  # 9 or 24 cells
    assert [c.prompt.version for c in small] == ["v1", "v2-mentor", "v3-few-shot"]
    cells = {c.request() for c in grid("v1,v2-mentor,v3-few-shot", 3)}
    assert {c.request() for c in small} <= cells  # each a cell's first request
    one = probe_cells(grid("v1", 1), SCENARIOS)  # one scenario in the grid, three probed
    assert [(c.scenario.id, c.seed) for c in one] == [
        (s.id, 42) for s in load_suite().select_scenarios(3)
    ]
    assert one[0].request() == grid("v1", 1)[0].request()


class Scripted(Backend):
    """Answers each prompt version with a fixed text: free answers from `free`, constrained
    ones a JSON list of 20 tokens. Counts its requests."""

    constrained_token_cost = 1.25

    def __init__(self, free: dict[str, str]) -> None:
        super().__init__(ModelSpec.parse("llamacpp:smollm2-135m"), BackendOptions())
        self.free = free
        self.requests: list[GenerationRequest] = []

    def describe(self) -> ModelInfo:
        return ModelInfo(135_000_000, "identity")

    def load(self) -> None: ...

    def unload(self) -> None: ...

    def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        if request.json_schema is not None:
            tips = '{"tips": ["Block 25 minutes now for the draft.", "Put the phone away today."]}'
            return Generation(tips, 10, 20, True)
        text = self.free[request.messages[-1][1]]
        return Generation(text, 10, len(text.split()), False)


def scripted(cells: list, answers: list[str]) -> Scripted:
    items = probe_cells(cells, SCENARIOS)
    return Scripted(
        {item.request().messages[-1][1]: text for item, text in zip(items, answers, strict=True)}
    )


def test_a_model_whose_first_free_answer_runs_on_is_settled_by_one_or_two_requests(
    tmp_path: Path,
) -> None:
    cells = grid("v1,v2-mentor,v3-few-shot", 3)
    backend = scripted(cells, [RUNAWAY, LIST, LIST])
    with_memory = PathMemory(tmp_path / "paths.sqlite")
    choice = Probe(with_memory, RetryPolicy(), backend).choose(cells, SCENARIOS)
    assert choice is not None and choice.path == "schema" and choice.constraints == SCHEMA_FIRST
    # its free answer, and the constrained one its cell takes on either path: 400 ≥ (0 + 2)
    # × 1.25 × 20 − 20 / 2
    assert len(backend.requests) == 2 == choice.asked
    assert backend.requests[1].json_schema is not None


def test_a_failed_free_answers_constrained_one_weighs_the_usable_ones(tmp_path: Path) -> None:
    cells = grid("v1,v2-mentor,v3-few-shot", 3)
    backend = scripted(cells, ["Sorry.", LIST, LIST])  # 1 word; then 17 words, usable
    probe = Probe(PathMemory(tmp_path / "paths.sqlite"), RetryPolicy(), backend)
    choice = probe.choose(cells, SCENARIOS)
    assert choice is not None and choice.path == "free-first"  # 35 + 10 < 2 × 1.25 × 20
    # the one constrained answer is the failed item's, which its cell needs on either path:
    # on the free-first path the probe spent nothing
    constrained = [r for r in backend.requests if r.json_schema is not None]
    assert len(backend.requests) == 4 and len(constrained) == 1
    assert constrained[0] == cells[0].request(constraint="schema")
    assert len(probe.answers) == 4  # every answer, for the cells that ask the same


def test_a_second_collect_chooses_from_memory_asking_nothing(tmp_path: Path) -> None:
    cells = grid("v1,v2-mentor,v3-few-shot", 3)
    backend = scripted(cells, [LIST, LIST, LIST])  # 19 words, usable, against 20 tokens ×1.25
    memory = PathMemory(tmp_path / "paths.sqlite")
    first = Probe(memory, RetryPolicy(), backend).choose(cells, SCENARIOS)
    assert first is not None and first.path == "free-first" and first.constraints == FREE_FIRST
    assert first.asked == len(backend.requests) == 4  # three free answers, one constrained
    assert all(r.seed == 42 for r in backend.requests)

    again = scripted(cells, [LIST, LIST, LIST])
    later = Probe(memory, RetryPolicy(), again, ask=False).choose(
        grid("v1,v2-mentor,v3-few-shot", 8), SCENARIOS
    )
    assert later is not None and (later.path, later.source, later.asked) == (
        "free-first",
        "remembered",
        0,
    )
    assert later.evidence == first.evidence and not again.requests
    # another prompt set is another probe: from memory alone it cannot be known
    assert Probe(memory, RetryPolicy(), again, ask=False).choose(grid("v1", 3), SCENARIOS) is None


class FromFile(Scripted):
    """A scripted model whose weights are read from `file`."""

    def __init__(self, file: Path | None) -> None:
        super().__init__({})
        self.file = file

    @property
    def model_file(self) -> Path | None:
        return self.file


def test_a_model_file_tipbench_knows_takes_its_shipped_path_asking_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF weights")
    digest = hashlib.sha256(b"GGUF weights").hexdigest()
    shipped = PathChoice("schema", "shipped", evidence([(368, False)], []), cost=1.25)
    monkeypatch.setattr(_known_paths, "SHIPPED", {digest: shipped})
    memory = PathMemory(tmp_path / "paths.sqlite")

    backend = FromFile(weights)
    assert shipped_choice(backend, memory) == (shipped, 0) and not backend.requests
    assert shipped.describe() == (
        "schema (probe, shipped with tipbench for this file: 0 of 1 free answers usable, "
        "368 tokens)"
    )
    assert shipped.record()["source"] == "shipped"
    # the digest is remembered while the file keeps its size and time
    stat = weights.stat()
    assert memory.digest(f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}") == digest
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF weight!")  # the same size, other weights
    assert shipped_choice(FromFile(other), memory) == (None, 0)
    assert shipped_choice(FromFile(None), memory) == (None, 0)  # no file, and no print


class Printed(FromFile):
    """A served model (no file here) whose print is `top`: its first tokens' log-probabilities."""

    gives_logprobs = True

    def __init__(self, top: dict[str, float] | None) -> None:
        super().__init__(None)
        self.top = top
        self.asked: list[tuple[str, int]] = []

    def top_logprobs(self, prompt: str, n: int) -> dict[str, float] | None:
        self.asked.append((prompt, n))
        return self.top


def test_a_served_model_without_a_file_is_recognised_by_its_print(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = PathChoice("schema", "shipped", evidence([(368, False)], []), cost=1.25)
    monkeypatch.setattr(_known_paths, "SHIPPED", {"digest": shipped})
    print_ = {" take": -2.1809, "\n": -2.7267, " just": -3.0076}
    monkeypatch.setattr(_known_paths, "PRINTS", {"digest": print_})
    memory = PathMemory(tmp_path / "paths.sqlite")
    tolerance = _known_paths.PRINT_TOLERANCE

    same = Printed({token: value + tolerance / 2 for token, value in print_.items()})
    assert shipped_choice(same, memory) == (shipped, 1)  # one request: the print
    assert same.asked == [(_known_paths.PRINT_TEXT, _known_paths.PRINT_TOKENS)]
    assert shipped_choice(same, memory, ask=False) == (None, 0) and len(same.asked) == 1

    moved = Printed({**print_, " take": -2.1809 - 2 * tolerance})  # another quantization
    assert shipped_choice(moved, memory) == (None, 1)
    other = Printed({" take": -2.1809, "\n": -2.7267, " start": -3.0076})  # another token
    assert shipped_choice(other, memory) == (None, 1)
    assert shipped_choice(Printed(None), memory) == (None, 1)  # asked; the server refused


def test_a_cell_takes_the_probes_constrained_answer_else_asks_only_its_missing_tips(
    tmp_path: Path,
) -> None:
    cells = grid("v1,v2-mentor,v3-few-shot", 3)  # two tips a cell
    one = "1. Put the phone away.\n"  # one tip of two, in 5 words
    backend = scripted(cells, [one, LIST, LIST])
    probe = Probe(PathMemory(tmp_path / "paths.sqlite"), RetryPolicy(), backend)
    choice = probe.choose(cells, SCENARIOS)
    assert choice is not None and choice.path == "free-first"  # 39 + 10 < 2 × 1.25 × 20

    def handed(request: GenerationRequest) -> RequestRecord | None:
        return probe.answers.pop(request_key(cells[0].model_identity, request), None)

    # the first cell: its free answer and the whole constrained answer that weighed the
    # probe are handed over, so it asks nothing
    asked, records = len(backend.requests), []
    first = answer_cell(backend, cells[0], 1, choice.constraints, records, handed)
    assert first.path == "free+schema" and len(backend.requests) == asked
    assert len(first.parsed.tips) == 2 and len(records) == 2

    # a cell the probe did not ask, short of one tip: it keeps its tip and the schema asks
    # for the missing one only, with the same messages
    other = cells[1]
    backend.free[other.request().messages[-1][1]] = one
    answer = answer_cell(backend, other, 1, choice.constraints, records, handed)
    assert answer.path == "free+rest" and len(backend.requests) == asked + 2
    rest = backend.requests[-1]
    assert rest.json_schema is not None and rest.messages == other.request().messages
    assert rest.json_schema["properties"]["tips"]["maxItems"] == 1
    assert answer.parsed.tips == ("Put the phone away.", "Block 25 minutes now for the draft.")
    assert parse_answer(answer.generation.text, 2) == answer.parsed  # as the cache reads it


def test_answers_remembered_before_tips_were_counted_still_choose(tmp_path: Path) -> None:
    path = tmp_path / "paths.sqlite"
    with sqlite3.connect(path) as old:  # the file as tipbench wrote it before
        old.execute(
            "CREATE TABLE probe_answers (key TEXT PRIMARY KEY, free_tokens INTEGER NOT NULL,"
            " usable INTEGER NOT NULL, schema_tokens INTEGER,"
            " created TEXT DEFAULT CURRENT_TIMESTAMP)"
        )
        old.execute("INSERT INTO probe_answers VALUES ('a', 40, 1, NULL, NULL)")
        old.execute("INSERT INTO probe_answers VALUES ('b', 90, 0, 70, NULL)")
    old.close()
    memory = PathMemory(path)
    usable, failed = memory.get("a"), memory.get("b")
    assert usable is not None and failed is not None
    assert (usable.tips, usable.found(3), failed.found(3)) == (None, 3, 0)  # as they counted then
    memory.put("c", ProbeAnswer(30, False, tips=2))
    assert memory.get("c") == ProbeAnswer(30, False, None, 2)


def test_a_close_call_asks_more_items_until_the_margin_settles_it(tmp_path: Path) -> None:
    cells = grid("v1,v2-mentor,v3-few-shot", 3)  # two tips a cell
    backend = scripted(cells, ["I cannot help with that today.", LIST, LIST])
    fourth = probe_cells(cells, SCENARIOS, 2)[3]  # v1 on the second scenario
    backend.free[fourth.request().messages[-1][1]] = "1. Put the phone away.\n"  # 1 tip of 2
    choice = Probe(PathMemory(tmp_path / "paths.sqlite"), RetryPolicy(), backend).choose(
        cells, SCENARIOS
    )
    # after three: 40 free tokens against 2 × 1.25 × 20 = 50 saved, within the margin of
    # 10; the fourth (5 tokens, half its tips) settles it: 45 + 10 < 2.5 × 1.25 × 20 = 62.5
    assert choice is not None and choice.path == "free-first"
    assert choice.evidence == Evidence(4, 2, 45, 1, 20, kept=0.5)
    assert [r.json_schema is None for r in backend.requests] == [True, False, True, True, True]
    # the same three answers without the fourth would have chosen the schema: 50 ≥ 50
    assert evidence([(6, False), (17, True), (17, True)], [20], 2).decide(1.25) == "schema"
    assert evidence([(6, False), (17, True), (17, True)], [20], 2).close(1.25)
