"""No label is wasted when more runs are collected after the judging began (issue 43, item 5).

A person scores the judge file's first items in order, then more scenarios are collected into
the experiment. Before, the new runs took random places in the cells' queues and the earlier
scores became "scored out of turn": unused. Now every later collection queues in a stratum of
its own, so the scored prefix stays a prefix."""

from __future__ import annotations

import numpy as np

from tipbench.human_tier import JudgingOrder, combined_state, next_run, serving_order
from tipbench.tracking import PARENT_RUN_TAG, CellRun, metric_name

MODEL = "ollama:m"


def _runs(collection: str, scenarios: range) -> list[CellRun]:
    """Two prompts, two runs per scenario, every run scored by the judge, none by a human."""
    return [
        CellRun(
            MODEL,
            prompt,
            f"s{s}",
            run_id=f"{collection}-{prompt}-{s}-{r}",
            metrics={metric_name("auto", "composite"): 10.0 + s % 3},
            extra_tags={PARENT_RUN_TAG: collection},
        )
        for prompt in ("v1", "v2")
        for s in scenarios
        for r in range(2)
    ]


def _scored(runs: list[CellRun], ids: set[str]) -> list[CellRun]:
    return [
        CellRun(
            run.model,
            run.prompt_version,
            run.scenario_id,
            run_id=run.run_id,
            metrics={**run.metrics, "composite": 12.0} if run.run_id in ids else run.metrics,
            extra_tags=run.extra_tags,
        )
        for run in runs
    ]


def _judged_then_collected(collections: frozenset[str] | None) -> tuple[int, int, list[str]]:
    """Score the file's first 10 items, collect 4 more scenarios: (scores used, unused, the
    new file's first items)."""
    first = _runs("c1", range(4))
    order = JudgingOrder("uniform", seed=5, created_at="2026-11-28T00:00:00+00:00",
                         collections=collections)  # fmt: skip
    listed = serving_order(combined_state(first, order))
    runs = _scored(first, set(listed[:10])) + _runs("c2", range(4, 8))
    state = combined_state(runs, order)
    return len(state.sample.unit), state.unused, serving_order(state)


def test_runs_collected_after_scoring_began_queue_in_a_stratum_of_their_own() -> None:
    used, unused, listed = _judged_then_collected(frozenset({"c1"}))
    assert (used, unused) == (10, 0)
    # The new collection has none scored: its runs come first until it has the same share
    # scored as the first (10 of 16), then the two take turns, the older first.
    assert [run_id[:2] for run_id in listed[:12]] == ["c2"] * 10 + ["c1", "c2"]


def test_without_strata_the_same_scores_were_scored_out_of_turn() -> None:
    """The order as recorded before strata (one queue per cell): the same labels, wasted."""
    used, unused, _ = _judged_then_collected(None)
    assert unused > 0 and used + unused == 10


def test_each_strata_prefix_is_a_sample_with_its_own_inclusion_probabilities() -> None:
    """After 10 of 16 first runs are scored and 16 new ones arrive, scoring 4 more serves the
    new stratum; its runs' inclusion is their stratum's share, the first stratum's theirs."""
    first = _runs("c1", range(4))
    order = JudgingOrder("uniform", seed=5, created_at="2026-11-28T00:00:00+00:00",
                         collections=frozenset({"c1"}))  # fmt: skip
    ids = set(serving_order(combined_state(first, order))[:10])
    runs = _scored(first, ids) + _runs("c2", range(4, 8))
    for _ in range(4):
        run = next_run(combined_state(runs, order))
        assert run is not None and run.run_id.startswith("c2-")
        ids.add(run.run_id)
        runs = _scored(runs, ids)
    state = combined_state(runs, order)
    inclusion = dict(zip((state.runs[u].run_id for u in state.sample.unit),
                         state.sample.inclusion, strict=True))  # fmt: skip
    assert len(inclusion) == 14 and state.unused == 0
    for collection, scored in (("c1-", 10), ("c2-", 4)):
        for prompt in ("v1", "v2"):  # each cell's stratum: its scored share, k of its 8 runs
            mine = [p for run_id, p in inclusion.items() if run_id.startswith(collection + prompt)]
            assert np.allclose(mine, len(mine) / 8)
        assert sum(1 for run_id in inclusion if run_id.startswith(collection)) == scored


def test_the_order_records_its_collections_and_reads_them_back() -> None:
    """Tags written and read: the collections, none, and an order recorded before strata."""
    for collections in (frozenset({"a" * 32, "b" * 32}), frozenset(), None):
        order = JudgingOrder("active", 1, "2026-11-28T00:00:00+00:00", collections=collections)
        assert JudgingOrder.of("run", order.tags()).collections == collections
