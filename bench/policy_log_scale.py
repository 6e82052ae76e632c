#!/usr/bin/env python
"""Does the decision log scale? Export time per 100,000 rows at 100k and 1M decisions, on the
embedded SQLite store and a real PostgreSQL, and `/stats` latency at the largest size.

Each store is filled with synthetic `/serve` decisions (the live `egreedy-v1` and a `linucb`
shadow, as a served request logs them; written in batches through `record_decisions`), grown
size by size. At each size the whole log is exported to JSON lines
(`tipbench.policy_service.export_log`, which pages through it); the time per 100k rows at the
largest size over that at the smallest is the linearity ratio (target ≤ 1.3: an export that
rescans the index per page grows quadratically). At the largest size a real `tipbench policy
serve` answers `GET /stats` (counters kept with every write, not a count of the log) and the
do-nothing `GET /ping` of the same app, sequentially: the median and p95 of `/stats`
(target: median under 10 ms) and its ratio to `/ping`.

    python bench/policy_log_scale.py [--sizes 100000,1000000] [--stores sqlite,postgresql]
                                     [--requests 200]

Smoke run (the coordinator measures on an idle machine): `--sizes 2000,20000 --requests 20`.
Exit status: 0 if every target holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from tipbench.policies import (
    Moment,
    PolicyConfig,
    Profile,
    ProfileStats,
    features_v1,
    features_v2,
)
from tipbench.policy_service import (
    DecisionRecord,
    PolicyDecision,
    ScoredCandidate,
    StateStore,
    export_log,
    open_store,
)
from tipbench_dev.postgres import PostgresCluster
from tipbench_dev.servers import PolicyServer

LINEARITY_TARGET = 1.3
STATS_TARGET_MS = 10.0
BATCH = 5000
START = datetime(2026, 1, 5, tzinfo=UTC)
CATEGORIES = ("focus", "break", "planning", "wind-down")


def decisions(first: int, count: int, seed: int) -> Iterator[DecisionRecord]:
    """Synthetic served decisions number first .. first + count - 1."""
    rng = np.random.default_rng(seed + first)
    profile = Profile.from_stats(ProfileStats())  # a new user's
    settings = PolicyConfig()
    # a cold start's scores: every candidate equally likely
    candidates = tuple(ScoredCandidate(f"tip-{c}", c, 0.0, 0.25) for c in CATEGORIES)
    for sequence in range(first, first + count):
        moment = Moment(
            local_hour=float(rng.uniform(0, 24)),
            weekday=int(rng.integers(7)),
            open_tasks=int(rng.integers(10)),
            minutes_to_deadline=float(rng.uniform(0, 20000)),
            tips_today=int(rng.integers(4)),
        )
        chosen = CATEGORIES[int(rng.integers(4))]
        live = PolicyDecision(
            "egreedy-v1", "v1", tuple(features_v1(moment).tolist()), candidates,
            f"tip-{chosen}", 0.25, settings,
        )  # fmt: skip
        shadow = PolicyDecision(
            "linucb", "v2", tuple(features_v2(moment, profile).tolist()), candidates,
            f"tip-{CATEGORIES[int(rng.integers(4))]}", 0.25, settings,
        )  # fmt: skip
        yield DecisionRecord(
            id=uuid.uuid4().hex,
            sequence=sequence,
            created_at=(START + timedelta(seconds=sequence)).isoformat(timespec="microseconds"),
            user_id=f"u{int(rng.integers(5000))}",
            route="serve",
            moment=moment,
            decision=live,
            shadows=(shadow,),
        )


def grow(store: StateStore, have: int, want: int) -> None:
    """Add decisions until the log holds `want`."""
    while have < want:
        count = min(BATCH, want - have)
        store.record_decisions(list(decisions(have + 1, count, seed=7)))
        have += count


def export_seconds(store: StateStore, folder: Path) -> float:
    out = folder / "log.jsonl"
    started = time.perf_counter()
    export_log(store, out, "jsonl")
    seconds = time.perf_counter() - started
    out.unlink()  # about 2 GB at a million decisions
    return seconds


def latency_ms(server: PolicyServer, path: str, requests: int) -> list[float]:
    times = []
    with server.client() as client:
        client.get(path)  # warm: connection, first query
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(path)
            times.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    return times


def bench_store(kind: str, url: str, sizes: list[int], requests: int, folder: Path) -> bool:
    print(f"\n{kind}: export time per 100k rows")
    store = open_store(url)
    rates: list[float] = []
    have = 0
    try:
        for size in sizes:
            built = time.perf_counter()
            grow(store, have, size)
            have = size
            print(f"  {size:>9,} decisions (built in {time.perf_counter() - built:.1f} s)", end="")
            seconds = export_seconds(store, folder)
            rate = seconds / size * 100_000
            rates.append(rate)
            print(f"  export {seconds:.2f} s = {rate:.2f} s per 100k")
    finally:
        store.close()
    linear = rates[-1] / rates[0]
    print(f"  per-row cost at {sizes[-1]:,} / at {sizes[0]:,}: {linear:.2f} "
          f"(target ≤ {LINEARITY_TARGET})")  # fmt: skip
    with PolicyServer(folder / f"serve-{kind}", url) as server:
        stats = latency_ms(server, "/stats", requests)
        ping = latency_ms(server, "/ping", requests)
    median, p95 = statistics.median(stats), float(np.percentile(stats, 95))
    baseline = statistics.median(ping)
    print(
        f"  GET /stats at {sizes[-1]:,}: median {median:.2f} ms, p95 {p95:.2f} ms (target: "
        f"median < {STATS_TARGET_MS:g} ms); /ping median {baseline:.2f} ms, "
        f"ratio {median / baseline:.2f}"
    )
    return linear <= LINEARITY_TARGET and median < STATS_TARGET_MS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="log sizes, smallest first")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--requests", type=int, default=200, help="/stats requests timed")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    held = True
    with tempfile.TemporaryDirectory(prefix="tipbench-log-scale-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        for kind in args.stores.split(","):
            if kind == "sqlite":
                url = f"sqlite:///{folder / 'state.sqlite'}"
            elif kind == "postgresql":
                url = stack.enter_context(PostgresCluster()).database()
            else:
                raise SystemExit(f"unknown store {kind!r} (sqlite, postgresql)")
            held = bench_store(kind, url, sizes, args.requests, folder) and held
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
