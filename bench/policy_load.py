"""The policy service under load: /serve + /reward against a do-nothing route of the same app.

Starts `tipbench policy serve` on 127.0.0.1 (an ephemeral port; the default SQLite store in a
temporary $TIPBENCH_HOME; live `egreedy-v2`, shadows `linucb` and `egreedy-v1`), then runs
the same load twice per round, the order alternating:

- **policy**: 50 concurrent clients, each posting `/serve` (3–5 candidates) and then
  `/reward` for the decision it got, until `--requests` requests have been answered;
- **noop**: the same 50 clients and number of requests on `GET /ping`, which does nothing
  but pass the same auth and answer.

Prints each side's throughput and p50/p99 latency (all requests, and /serve and /reward
separately), and the p99 ratio policy / noop from each side's best round (target ≤ 2).
Loopback only, bounded.

    python bench/policy_load.py [--requests 3000] [--clients 50] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

import httpx

from _report import best_ratio, percentile
from tipbench._dev.servers import POLICY_TOKEN as TOKEN
from tipbench._dev.servers import PolicyServer

TARGET_P99_RATIO = 2.0
CATEGORIES = ("focus", "planning", "quick-win", "break", "wind-down")
EVENTS = ("completed", "dismissed", "viewed")


def decision_request(rng: random.Random, user: int) -> dict[str, object]:
    k = rng.randint(3, 5)
    return {
        "user_id": f"user-{user}",
        "context": {
            "local_hour": rng.randrange(24),
            "weekday": rng.randrange(7),
            "open_tasks": rng.randrange(10),
            "minutes_to_deadline": rng.choice([None, rng.randrange(5000)]),
            "tips_today": rng.randrange(4),
        },
        "candidates": [
            {"tip_id": f"tip-{i}", "category": category}
            for i, category in enumerate(rng.sample(CATEGORIES, k))
        ],
    }


async def policy_load(
    url: str, clients: int, requests: int
) -> tuple[dict[str, list[float]], float]:
    """Clients alternating /serve and /reward; latencies per route, wall seconds."""
    latencies: dict[str, list[float]] = {"serve": [], "reward": []}
    remaining = requests
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as c:

        async def client(index: int) -> None:
            nonlocal remaining
            rng = random.Random(index)
            while remaining >= 2:
                remaining -= 2
                started = time.perf_counter()
                served = await c.post("/serve", json=decision_request(rng, rng.randrange(500)))
                served.raise_for_status()
                latencies["serve"].append(time.perf_counter() - started)
                policy, decision_id = served.json()["policy"], served.json()["decision_id"]
                started = time.perf_counter()
                rewarded = await c.post(
                    f"/reward/{policy}",
                    json={"decision_id": decision_id, "reward": rng.random(),
                          "event": rng.choice(EVENTS), "dwell_s": rng.uniform(0, 120)},
                )  # fmt: skip
                rewarded.raise_for_status()
                latencies["reward"].append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        return latencies, time.perf_counter() - started


async def noop_load(url: str, clients: int, requests: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    remaining = requests
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as c:

        async def client() -> None:
            nonlocal remaining
            while remaining >= 1:
                remaining -= 1
                started = time.perf_counter()
                (await c.get("/ping")).raise_for_status()
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return latencies, time.perf_counter() - started


def row(name: str, values: list[float], seconds: float | None) -> str:
    rate = f"{len(values) / seconds:9.0f}" if seconds else f"{'':9}"
    return (
        f"{name:8} {len(values):6d} {rate} {percentile(values, 0.5) * 1000:9.1f}"
        f" {percentile(values, 0.99) * 1000:9.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tipbench-policy-load-") as tmp:
        home = Path(tmp)
        os.environ["TIPBENCH_HOME"] = str(home)
        state = f"sqlite:///{home / 'policy-state.sqlite'}"
        options = ("--live", "egreedy-v2", "--shadows", "linucb,egreedy-v1")
        with PolicyServer(home / "server", state, *options) as server:
            asyncio.run(policy_load(server.url, 10, 100))  # warm up
            asyncio.run(noop_load(server.url, 10, 100))
            policy_rounds: list[tuple[dict[str, list[float]], float]] = []
            noop_rounds: list[tuple[list[float], float]] = []
            for round_ in range(args.rounds):
                sides = ("policy", "noop") if round_ % 2 == 0 else ("noop", "policy")
                for side in sides:
                    if side == "policy":
                        policy_rounds.append(
                            asyncio.run(policy_load(server.url, args.clients, args.requests))
                        )
                    else:
                        noop_rounds.append(
                            asyncio.run(noop_load(server.url, args.clients, args.requests))
                        )

    def p99_policy(r: tuple[dict[str, list[float]], float]) -> float:
        return percentile(r[0]["serve"] + r[0]["reward"], 0.99)

    best_policy = min(policy_rounds, key=p99_policy)
    best_noop = min(noop_rounds, key=lambda r: percentile(r[0], 0.99))
    latencies, seconds = best_policy
    print(
        f"{args.clients} concurrent clients, {args.requests} requests per side, "
        f"{args.rounds} rounds (best round per side)"
    )
    print(f"{'':8} {'n':>6} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9}")
    print(row("policy", latencies["serve"] + latencies["reward"], seconds))
    print(row(" /serve", latencies["serve"], None))
    print(row(" /reward", latencies["reward"], None))
    print(row("noop", best_noop[0], best_noop[1]))
    ratio = best_ratio(
        [percentile(n[0], 0.99) for n in noop_rounds], [p99_policy(p) for p in policy_rounds]
    )
    rounds = ", ".join(
        f"{p99_policy(p) / percentile(n[0], 0.99):.2f}"
        for p, n in zip(policy_rounds, noop_rounds, strict=True)
    )
    verdict = "PASS" if ratio <= TARGET_P99_RATIO else "FAIL"
    print(
        f"p99 ratio policy / noop {ratio:.2f} (rounds: {rounds}; "
        f"target <= {TARGET_P99_RATIO:g}): {verdict}"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
