"""The policy service under load: /serve + /reward against a do-nothing route of the same app.

Starts `tipbench policy serve` on 127.0.0.1 (an ephemeral port; the default SQLite store in a
temporary $TIPBENCH_HOME; live `egreedy-v2`, shadows `linucb` and `egreedy-v1`; access
lines off, `--log-level warning`), or targets
a running one with `--url` (its serving token from `TIPBENCH_POLICY_TOKEN`; the load's users
are `load-user-N`, and their decisions stay in that server's state). Then runs the same load
on both sides in every round, the order alternating:

- **policy**: concurrent clients, each posting `/serve` (3–5 candidates) and then
  `/reward` for the decision it got, until `--requests` requests have been answered;
- **noop**: the same clients and number of requests on `GET /ping`, which does nothing
  but pass the same auth and answer.

A failed request (a transport error such as `ReadError`, or an HTTP error status) is counted
by kind and reported, never fatal; its latency is left out. Prints each side's throughput
and p50/p99 latency (all requests, and /serve and /reward separately) from its median round,
and the p99 ratio policy / noop of every round with their median and spread (min–max and
interquartile range). Verdict: the median ratio ≤ 2 and at most 1% of the requests failed.
Loopback only unless `--url` says otherwise; bounded.

With `--provenance` the two sides are the policy load itself, with and without provenance on
every candidate (model, prompt version, experiment, cell run, tip index: what the online tier
reads), the same requests otherwise; the verdict is a median p99 ratio with / without ≤ 1.05
(issue 49, item 7).

    python bench/policy_load.py [--requests 3000] [--clients 50] [--rounds 7] [--url URL]
    python bench/policy_load.py --provenance
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from _report import percentile
from tipbench_dev.servers import POLICY_TOKEN, PolicyServer

TARGET_P99_RATIO = 2.0
TARGET_PROVENANCE_RATIO = 1.05
MAX_ERROR_SHARE = 0.01
PROMPTS = ("v1", "v2-mentor", "v3-few-shot")
CATEGORIES = ("focus", "planning", "quick-win", "break", "wind-down")
EVENTS = ("completed", "dismissed", "viewed")


@dataclass
class Side:
    """One side's round: latencies of the answered requests per route, failures by kind."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def all(self) -> list[float]:
        return [x for values in self.latencies.values() for x in values]

    @property
    def p99(self) -> float:
        return percentile(self.all(), 0.99) if self.all() else float("inf")

    async def timed(self, route: str, request: Awaitable[httpx.Response]) -> httpx.Response | None:
        """Await `request`; its latency if it succeeded, else the failure counted."""
        started = time.perf_counter()
        try:
            response = await request
        except httpx.TransportError as exc:
            self.errors[f"{route} {type(exc).__name__}"] += 1
            return None
        if response.is_error:
            self.errors[f"{route} HTTP {response.status_code}"] += 1
            return None
        self.latencies.setdefault(route, []).append(time.perf_counter() - started)
        return response


def source(index: int) -> dict[str, object]:
    """A candidate's provenance (no random draw: the requests stay the same with or without)."""
    return {
        "model": "llamacpp:smollm2-135m",
        "prompt_version": PROMPTS[index % len(PROMPTS)],
        "experiment": "tip-bench-auto",
        "run_id": f"{index * 7919 + 12345:032x}",
        "tip_index": index,
    }


def decision_request(rng: random.Random, user: int, provenance: bool = False) -> dict[str, object]:
    k = rng.randint(3, 5)
    context = {
        "local_hour": rng.randrange(24),
        "weekday": rng.randrange(7),
        "open_tasks": rng.randrange(10),
        "minutes_to_deadline": rng.choice([None, rng.randrange(5000)]),
        "tips_today": rng.randrange(4),
    }
    candidates: list[dict[str, object]] = [
        {"tip_id": f"tip-{i}", "category": category}
        for i, category in enumerate(rng.sample(CATEGORIES, k))
    ]
    if provenance:
        for i, candidate in enumerate(candidates):
            candidate["source"] = source(i)
    return {"user_id": f"load-user-{user}", "context": context, "candidates": candidates}


def _client(url: str, token: str, clients: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120)


async def policy_load(
    url: str, token: str, clients: int, requests: int, provenance: bool = False
) -> Side:
    """Clients alternating /serve and /reward for the decision they got (`provenance`: every
    candidate says where it came from)."""
    side = Side()
    remaining = requests
    async with _client(url, token, clients) as c:

        async def client(index: int) -> None:
            nonlocal remaining
            rng = random.Random(index)
            while remaining >= 2:
                remaining -= 2
                body = decision_request(rng, rng.randrange(500), provenance)
                served = await side.timed("/serve", c.post("/serve", json=body))
                if served is None:
                    continue
                policy, decision_id = served.json()["policy"], served.json()["decision_id"]
                reward = {"decision_id": decision_id, "reward": rng.random(),
                          "event": rng.choice(EVENTS), "dwell_s": rng.uniform(0, 120)}  # fmt: skip
                await side.timed("/reward", c.post(f"/reward/{policy}", json=reward))

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        side.seconds = time.perf_counter() - started
    return side


async def noop_load(url: str, token: str, clients: int, requests: int) -> Side:
    side = Side()
    remaining = requests
    async with _client(url, token, clients) as c:

        async def client() -> None:
            nonlocal remaining
            while remaining >= 1:
                remaining -= 1
                await side.timed("/ping", c.get("/ping"))

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        side.seconds = time.perf_counter() - started
    return side


def run_rounds(url: str, token: str, args: argparse.Namespace) -> tuple[list[Side], list[Side]]:
    """(policy, baseline) sides of every round: the baseline is /ping, or with --provenance
    the policy load without provenance (and the policy side has it)."""
    asyncio.run(policy_load(url, token, 10, 100, args.provenance))  # warm up
    asyncio.run(noop_load(url, token, 10, 100))
    policy: list[Side] = []
    noop: list[Side] = []
    for round_ in range(args.rounds):
        for side in ("policy", "noop") if round_ % 2 == 0 else ("noop", "policy"):
            if side == "policy":
                load = policy_load(url, token, args.clients, args.requests, args.provenance)
                policy.append(asyncio.run(load))
            elif args.provenance:
                noop.append(asyncio.run(policy_load(url, token, args.clients, args.requests)))
            else:
                noop.append(asyncio.run(noop_load(url, token, args.clients, args.requests)))
        print(f"round {round_ + 1}: p99 ratio {policy[-1].p99 / noop[-1].p99:.2f}", flush=True)
    return policy, noop


def row(name: str, values: list[float], seconds: float | None) -> str:
    if not values:
        return f"{name:8} {0:6d}"
    rate = f"{len(values) / seconds:9.0f}" if seconds else f"{'':9}"
    return (
        f"{name:8} {len(values):6d} {rate} {percentile(values, 0.5) * 1000:9.1f}"
        f" {percentile(values, 0.99) * 1000:9.1f}"
    )


def report(policy: list[Side], noop: list[Side], args: argparse.Namespace) -> int:
    """Print the sides' median rounds, every round's ratio and the verdict; the exit code."""
    ratios = [p.p99 / n.p99 for p, n in zip(policy, noop, strict=True)]
    middle = sorted(range(len(ratios)), key=ratios.__getitem__)[len(ratios) // 2]
    p, n = policy[middle], noop[middle]
    print(
        f"{args.clients} concurrent clients, {args.requests} requests per side, "
        f"{args.rounds} rounds (the median round shown)"
    )
    names = ("source", "plain") if args.provenance else ("policy", "noop")
    print(f"{'':8} {'n':>6} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9}")
    for name, side in zip(names, (p, n), strict=True):
        print(row(name, side.all(), side.seconds))
        for route in ("/serve", "/reward"):
            if route in side.latencies:
                print(row(f" {route}", side.latencies[route], None))
    errors = sum((s.errors for s in policy + noop), Counter[str]())
    sent = sum(len(s.all()) for s in policy + noop) + sum(errors.values())
    share = sum(errors.values()) / max(sent, 1)
    listed = ", ".join(f"{kind} ×{count}" for kind, count in errors.most_common()) or "none"
    print(f"failed requests: {sum(errors.values())} of {sent} ({share:.2%}): {listed}")
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    median = statistics.median(ratios)
    print(
        f"p99 ratio {' / '.join(names)} per round: {', '.join(f'{r:.2f}' for r in ratios)}\n"
        f"median {median:.2f}, min–max {min(ratios):.2f}–{max(ratios):.2f}, "
        f"IQR {quartiles[0]:.2f}–{quartiles[2]:.2f}"
    )
    target = TARGET_PROVENANCE_RATIO if args.provenance else TARGET_P99_RATIO
    passed = median <= target and share <= MAX_ERROR_SHARE
    print(
        f"target: median ratio <= {target:g}, failed <= {MAX_ERROR_SHARE:.0%}: "
        f"{'PASS' if passed else 'FAIL'}"
    )
    return 0 if passed else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--url", help="a running `policy serve` (TIPBENCH_POLICY_TOKEN)")
    parser.add_argument(
        "--provenance",
        action="store_true",
        help="compare the load with provenance on every candidate against the same without",
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.requests < 2 or args.clients < 1:
        parser.error("--rounds and --clients must be at least 1, --requests at least 2")

    if args.url:
        token = os.environ.get("TIPBENCH_POLICY_TOKEN", "").split(",")[0].strip()
        if not token:
            parser.error("--url needs the server's serving token in TIPBENCH_POLICY_TOKEN")
        return report(*run_rounds(args.url.rstrip("/"), token, args), args)
    with tempfile.TemporaryDirectory(prefix="tipbench-policy-load-") as tmp:
        home = Path(tmp)
        os.environ["TIPBENCH_HOME"] = str(home)
        state = f"sqlite:///{home / 'policy-state.sqlite'}"
        options = ("--live", "egreedy-v2", "--shadows", "linucb,egreedy-v1", "--log-level",
                   "warning")  # fmt: skip
        with PolicyServer(home / "server", state, *options) as server:
            rounds = run_rounds(server.url, POLICY_TOKEN, args)
    return report(*rounds, args)


if __name__ == "__main__":
    raise SystemExit(main())
