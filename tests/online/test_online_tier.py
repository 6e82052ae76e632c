"""The online tier (issue 49, items 2 and 6): each source's value of serving its tips, from a
decision log, in seeded worlds where one prompt's tips truly do better with users and the
logger's preferences make the plain served means lie (`support.online_worlds`)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from support.online_worlds import PROMPTS, OnlineWorld, source
from tipbench._errors import ConfigError
from tipbench.online import PAIRED_SOURCES, SourceRun, compare_sources, online_tier

BEST, MIDDLE, WORST = source("v2-mentor"), source("v3-few-shot"), source("v1")


def test_intervals_cover_and_the_truly_better_prompt_ranks_first() -> None:
    """150 logs of 800 decisions: each source's DR interval covers its true value in at least
    93% of them (97% measured over 200), the truly better prompt leads in at least 95% (all
    200 measured) while the plain mean reward of its served tips ranks it first in few (4%):
    the logger served the worst prompt's tips where every tip does well."""
    world = OnlineWorld()
    truth = world.truth()
    assert truth[BEST] > truth[MIDDLE] > truth[WORST]
    covered, leads, naive = [], [], []
    for seed in range(150):
        tier = online_tier(world.log(seed, 800))
        assert {r.source for r in tier.rows} == {source(p) for p in PROMPTS}
        for row in tier.rows:
            assert row.status == "estimated" and row.value is not None, row.reason
            covered.append(row.value.low <= truth[row.source] <= row.value.high)
        leads.append(tier.leader is not None and tier.leader.source == BEST)
        naive.append(max(tier.rows, key=lambda r: r.served_mean).source == BEST)
    assert np.mean(covered) >= 0.93, np.mean(covered)
    assert np.mean(leads) >= 0.95, np.mean(leads)
    assert np.mean(naive) <= 0.2, np.mean(naive)


def test_the_leader_is_compared_paired_and_the_worst_is_behind() -> None:
    tier = online_tier(OnlineWorld().log(7, 3000))
    assert [r.source for r in tier.rows] == [BEST, MIDDLE, WORST]
    assert [r.rank for r in tier.rows] == [1, 2, 3]
    assert tier.rows[0].standing == "leader" and tier.rows[0].vs_leader is None
    worst = tier.row(WORST)
    assert worst is not None and worst.standing == "behind"
    assert worst.vs_leader is not None and worst.vs_leader.high < 0
    document = tier.to_dict()
    assert document["rows"][0]["source"] == BEST and document["estimator"] == "dr"


def test_the_leaders_comparisons_read_once_or_twice_are_the_pairs_own() -> None:
    """Three sources are all paired in the one reading; six (each tip its own prompt) are more
    than `PAIRED_SOURCES`, and the leader's comparisons read the log again: either way each
    is `compare_sources`' own figure for the pair."""
    three = OnlineWorld().log(8, 2000)
    six = [dict(row) for row in OnlineWorld().log(9, 2000)]
    for row in six:
        row["candidates"] = [
            {**c, "source": {**c["source"], "prompt_version": f"p{c['tip_id']}"}}
            for c in row["candidates"]
        ]
    assert PAIRED_SOURCES < 6
    for log in (three, six):
        tier = online_tier(log)
        leader = tier.leader
        assert leader is not None and len(tier.rows) in (3, 6)
        for row in tier.rows[1:]:
            own = compare_sources(log, row.source, leader.source).difference
            assert row.vs_leader is not None and own is not None
            assert (row.vs_leader.value, row.vs_leader.low, row.vs_leader.high) == pytest.approx(
                (own.value, own.low, own.high), abs=1e-12
            )


def test_paired_comparisons_cover_the_true_difference() -> None:
    """120 logs of 800 decisions: compare_sources' interval of BEST − MIDDLE covers the true
    difference in at least 93% of them (about 96% measured over 200)."""
    world = OnlineWorld()
    truth = world.truth()
    hits = []
    for seed in range(120):
        found = compare_sources(world.log(seed, 800), BEST, MIDDLE)
        assert found.difference is not None, found.reason
        hits.append(found.difference.low <= truth[BEST] - truth[MIDDLE] <= found.difference.high)
    assert np.mean(hits) >= 0.93, np.mean(hits)


def test_thin_traffic_no_overlap_and_clipping() -> None:
    thin = online_tier(OnlineWorld().log(3, 60))
    assert {r.status for r in thin.rows} == {"not enough traffic"}
    assert all(r.rank is None and r.more_needed for r in thin.rows)
    never = OnlineWorld().logging
    never[:, 0:2] = 0.0  # the logger never shows v1's tips
    never /= never.sum(axis=1, keepdims=True)
    blind = online_tier(OnlineWorld(logging=never).log(3, 1500))
    assert blind.row(WORST).status == "no overlap"  # type: ignore[union-attr]
    rare = OnlineWorld().logging
    rare[:, 0:2] = 0.002  # v1's tips are shown 0.4% of the time: weights of 250, past the clip
    rare /= rare.sum(axis=1, keepdims=True)
    clipped = online_tier(OnlineWorld(logging=rare).log(3, 20_000)).row(WORST)
    assert clipped is not None and "snips" in clipped.biased and clipped.snips is None
    assert clipped.status == "estimated" and clipped.value is not None  # DR stays estimated


def test_bad_logs_are_refused_in_one_line() -> None:
    rows = OnlineWorld().log(5, 300)
    with pytest.raises(ConfigError, match="twice") as twice:
        online_tier([*rows, rows[10]])
    assert "\n" not in str(twice.value)
    with pytest.raises(ConfigError, match="on both sides"):
        compare_sources(rows, BEST, BEST)
    world = OnlineWorld(runs={"v1": "run-v1", "v2-mentor": "run-v2", "v3-few-shot": "gone"})

    def known(run: SourceRun) -> str | None:
        return "the tracking store has no such run" if run.run_id == "gone" else None

    with pytest.raises(ConfigError, match="'gone': the tracking store has no such run"):
        online_tier(world.log(5, 300), runs=known)
    assert online_tier(OnlineWorld(runs={"v1": "run-v1"}).log(5, 300), runs=known).rows


class LazyLog:
    """A seeded log made as it is read (never held whole), the same rows at every reading."""

    def __init__(self, seed: int, n: int) -> None:
        self.seed, self.n = seed, n

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        world = OnlineWorld()
        for start in range(0, self.n, 500):
            yield from world.log(self.seed * 1000 + start, min(500, self.n - start))


def _peak(n: int) -> int:
    tracemalloc.start()
    try:
        online_tier(LazyLog(11, n))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_log() -> None:
    """The tier reads the log in chunks through evaluate (4,096 decisions each): from 9,000
    to 27,000 decisions its peak grows by less than 64 bytes a decision (the decision ids
    evaluate keeps to refuse a decision counted twice take 16)."""
    small, large = _peak(9_000), _peak(27_000)
    assert (large - small) / 18_000 < 64, (small, large)
