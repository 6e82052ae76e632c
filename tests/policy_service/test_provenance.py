"""Where tips came from (issue 49, item 1): a candidate may carry its provenance (model, prompt
version, experiment, cell run, tip index); the store keeps it with the decision, on SQLite and
a real PostgreSQL alike, counts what was served of each source for `/stats` (candidates without
one as "unknown source"), takes those counts back when decisions are forgotten, and every
export format carries it (DSJson as a namespace the real `vowpalwabbit` reads)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest
import vowpalwabbit

from support.policy_state import MOMENT, make_service
from tipbench.policy_service import (
    UNKNOWN_SOURCE,
    CandidateTip,
    EventIdConflict,
    StateStore,
    TipSource,
    export_log,
    open_store,
)

MENTOR = TipSource("llamacpp:smollm2-135m", "v2-mentor", "tip-bench-auto", "run0001", 0)
PLAIN = TipSource("llamacpp:smollm2-135m", "v1", "tip-bench-auto", "run0002", 3)
RUN_ONLY = TipSource(run_id="run0003")  # names a run, not a (model, prompt): unknown source
CANDIDATES = [
    CandidateTip("t1", "focus", MENTOR),
    CandidateTip("t2", "break", PLAIN),
    CandidateTip("t3", "planning"),
    CandidateTip("t4", "focus", RUN_ONLY),
]


def served_source(tip_id: str) -> str:
    source = next(c.source for c in CANDIDATES if c.tip_id == tip_id)
    return UNKNOWN_SOURCE if source is None else source.key


def test_sources_are_kept_counted_and_taken_back(store: StateStore) -> None:
    svc = make_service(store)
    svc.configure({"live": "egreedy-v2", "shadows": ["linucb"], "reward_window_s": 60,
                   "default_reward": 0.0,
                   "policies": {"egreedy-v2": {"epsilon": 1.0}}})  # fmt: skip
    svc.clock = lambda: "2026-03-02T08:00:00.000000+00:00"
    expected: dict[str, dict[str, float]] = {}
    records = []
    for i in range(40):
        record = svc.decide(f"u{i % 2}", MOMENT, CANDIDATES)
        records.append(record)
        key = served_source(record.decision.tip_id)
        tally = expected.setdefault(key, {"decisions": 0, "rewards": 0, "sum": 0.0, "expired": 0})
        tally["decisions"] += 1
        if i % 4:  # every fourth decision is never rewarded: it expires
            reward = 1.0 if record.decision.tip_id == "t1" else 0.25
            svc.reward(None, record.id, reward, "completed" if reward == 1 else "viewed", 5.0)
            tally["rewards"] += 1
            tally["sum"] += reward
        else:
            tally["expired"] += 1
    svc.clock = lambda: "2026-03-02T09:00:00.000000+00:00"
    assert svc.expire() == 10

    logged = store.decision(records[0].id)
    assert logged is not None
    assert [c.source for c in logged.record.decision.candidates] == [c.source for c in CANDIDATES]
    assert all(c.source is None for c in logged.record.shadows[0].candidates)  # kept once

    sources = store.counts("egreedy-v2").sources
    assert set(sources) == set(expected)
    assert {UNKNOWN_SOURCE, MENTOR.key, PLAIN.key} >= set(sources)
    for key, tally in expected.items():
        counts = sources[key]
        assert (counts.decisions, counts.rewards) == (tally["decisions"], tally["rewards"])
        assert counts.reward_sum == pytest.approx(tally["sum"])
        assert counts.events.get("expired", 0) == tally["expired"]
    assert store.source_counts() == sources  # one policy served: the same over all of them
    assert store.counts("linucb").sources == {}  # a shadow serves nothing

    svc.reset("user", None, "u0")  # erasure takes back what u0's decisions counted
    left = [r for r in records if r.user_id == "u1"]
    after = store.source_counts()
    assert sum(c.decisions for c in after.values()) == len(left)
    for key in after:
        assert after[key].decisions == sum(served_source(r.decision.tip_id) == key for r in left)
    svc.reset("policy", "egreedy-v2", None)
    assert store.source_counts() == {}


def test_a_retry_must_name_the_same_sources(store: StateStore) -> None:
    svc = make_service(store)
    first = svc.decide("u1", MOMENT, CANDIDATES, event_id="e1")
    assert svc.decide("u1", MOMENT, CANDIDATES, event_id="e1").id == first.id
    other = [CandidateTip("t1", "focus", PLAIN), *CANDIDATES[1:]]
    with pytest.raises(EventIdConflict):
        svc.decide("u1", MOMENT, other, event_id="e1")


def test_every_export_format_carries_the_sources(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        svc = make_service(store)
        svc.configure({"live": "egreedy-v2", "shadows": ["linucb"],
                       "policies": {"egreedy-v2": {"epsilon": 1.0}}})  # fmt: skip
        for i in range(60):
            record = svc.decide(f"u{i}", MOMENT, CANDIDATES)
            reward = 1.0 if record.decision.tip_id == "t1" else 0.0
            svc.reward(None, record.id, reward, "completed", None)
        counts = {fmt: export_log(store, tmp_path / f"log.{fmt}", fmt) for fmt in
                  ("jsonl", "parquet", "dsjson")}  # fmt: skip
    finally:
        store.close()
    assert counts == {"jsonl": 60, "parquet": 60, "dsjson": 60}

    rows = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [c["source"] for c in rows[0]["candidates"]] == [
        {"model": "llamacpp:smollm2-135m", "prompt_version": "v2-mentor",
         "experiment": "tip-bench-auto", "run_id": "run0001", "tip_index": 0},
        {"model": "llamacpp:smollm2-135m", "prompt_version": "v1",
         "experiment": "tip-bench-auto", "run_id": "run0002", "tip_index": 3},
        None,
        {"run_id": "run0003"},
    ]  # fmt: skip
    assert all(c["source"] is None for c in rows[0]["shadows"][0]["candidates"])

    table = pq.read_table(tmp_path / "log.parquet").to_pylist()
    sources = [c["source"] for c in table[0]["candidates"]]
    assert sources[0] == rows[0]["candidates"][0]["source"]
    assert sources[2] is None
    assert sources[3] == {"model": None, "prompt_version": None, "experiment": None,
                          "run_id": "run0003", "tip_index": None}  # fmt: skip

    events = [json.loads(line) for line in (tmp_path / "log.dsjson").read_text().splitlines()]
    actions = events[0]["c"]["_multi"]
    assert actions[0]["Source"] == rows[0]["candidates"][0]["source"]
    assert "Source" not in actions[2]  # no provenance, no namespace
    assert actions[3]["Source"] == {"run_id": "run0003"}
    model = tmp_path / "model.vw"
    trainer = vowpalwabbit.Workspace(
        f"--cb_explore_adf --dsjson --interactions CT CS --quiet "
        f"-d {tmp_path / 'log.dsjson'} -f {model}"
    )
    trainer.run_parser()
    assert trainer.get_weighted_examples() == 60  # every event parsed, sources and all
    trainer.finish()
    learner = vowpalwabbit.Workspace(f"--dsjson --quiet -i {model}")
    line = (tmp_path / "log.dsjson").read_text().splitlines()[0]
    pmf = learner.predict(learner.parse(line, vowpalwabbit.LabelType.CONTEXTUAL_BANDIT))
    assert max(range(4), key=lambda i: pmf[i]) == 0  # t1: what the labels rewarded
    learner.finish()


def _as_version_2(url: str) -> None:
    """Make a state look as schema 2 wrote it: no `source` column, no source counters."""
    statements = [
        "DROP TABLE source_counters",
        "ALTER TABLE decisions DROP COLUMN source",
        "UPDATE settings SET value = '2' WHERE key = 'schema_version'",
    ]
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            for statement in statements:
                conn.execute(statement)
        finally:
            conn.close()
    else:
        with psycopg.connect(url, autocommit=True) as pg:
            for statement in statements:
                pg.execute(statement)


def test_a_version_2_state_counts_its_decisions_as_unknown_source(state_url: str) -> None:
    store = open_store(state_url)
    try:
        svc = make_service(store)
        plain = [CandidateTip(c.tip_id, c.category) for c in CANDIDATES]
        ids = [svc.decide("u1", MOMENT, plain).id for _ in range(3)]
        svc.reward(None, ids[0], 1.0, "completed", None)
        before = store.counts(svc.roles().live)
    finally:
        store.close()
    _as_version_2(state_url)
    again = open_store(state_url)
    try:
        live = make_service(again).roles().live
        sources = again.counts(live).sources
        assert list(sources) == [UNKNOWN_SOURCE]
        unknown = sources[UNKNOWN_SOURCE]
        assert (unknown.decisions, unknown.rewards, unknown.reward_sum) == (3, 1, 1.0)
        assert unknown.events == before.events
        svc = make_service(again)
        record = svc.decide("u2", MOMENT, CANDIDATES)
        assert again.decision(record.id) is not None
        assert sum(c.decisions for c in again.source_counts().values()) == 4
    finally:
        again.close()
