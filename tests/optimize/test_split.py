"""Issue 45, item 4: a drawn split is stratified by persona, then time slot, over many seeds.

With the old rule (a plain `random.sample` of 2 of the 8 bundled scenarios), seeds 42 and 0
trained on both of one persona's scenarios, as did 14 % of seeds 0–999.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest

from tipbench.optimize import split_scenarios
from tipbench.suite import load_suite

SCENARIOS = load_suite().scenarios
BY_ID = {s.id: s for s in SCENARIOS}
SEEDS = range(1000)


def strata(training: tuple[str, ...]) -> tuple[Counter[str], Counter[str]]:
    chosen = [BY_ID[s] for s in training]
    return Counter(s.persona for s in chosen), Counter(s.time_slot for s in chosen)


def test_the_default_split_trains_on_two_personas_and_both_time_slots_for_every_seed() -> None:
    drawn = Counter[str]()
    for seed in SEEDS:
        split = split_scenarios(SCENARIOS, seed)
        personas, slots = strata(split.training)
        assert len(split.training) == 2 and len(split.heldout) == 6
        assert len(personas) == 2 and len(slots) == 2, (seed, split.training)
        drawn.update(split.training)
    # within the rule every scenario is drawn about as often: 2 of 8, a quarter of the seeds
    assert set(drawn) == set(BY_ID)
    assert all(0.2 < n / len(SEEDS) < 0.3 for n in drawn.values()), drawn
    assert split_scenarios(SCENARIOS, 42) == split_scenarios(SCENARIOS, 42)  # seeded


@pytest.mark.parametrize(
    ("count", "per_persona", "per_slot"),
    [(3, [1, 1, 1], [1, 2]), (4, [1, 1, 1, 1], [2, 2]), (6, [1, 1, 2, 2], [3, 3])],
)
def test_a_drawn_count_spreads_over_personas_then_time_slots(
    count: int, per_persona: list[int], per_slot: list[int]
) -> None:
    for seed in SEEDS:
        split = split_scenarios(SCENARIOS, seed, count)
        personas, slots = strata(split.training)
        assert sorted(personas.values()) == per_persona, (seed, split.training)
        assert sorted(slots.values()) == per_slot, (seed, split.training)
        assert "stratified by persona and time slot" in split.how


def test_a_suite_of_one_stratum_gets_the_plain_seeded_sample() -> None:
    """The rule's last sentence (docs/optimize.md): one persona, one slot, `sample` itself."""
    flat = [replace(s, persona="p", time_slot="t") for s in SCENARIOS]
    ids = [s.id for s in flat]
    for seed in range(100):
        expected = set(random.Random(seed).sample(ids, 3))
        assert set(split_scenarios(flat, seed, 3).training) == expected
