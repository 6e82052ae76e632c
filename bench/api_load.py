"""Admin API under load: 200 concurrent leaderboard reads, idle and while a job generates.

Starts `tipbench serve` on 127.0.0.1 (an ephemeral port) over a SQLite store seeded with a
judged experiment, fires 200 concurrent `GET /api/bench/leaderboard/{experiment}` once with
the server idle and once while a pipeline job is generating on the embedded model, and
prints the p50 and p99 latency of each and their ratio (busy / idle). The p99 ratio must be
at most 3. Loopback only, bounded: 2 × 200 requests.

    python bench/api_load.py [--requests 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from _report import percentile
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore
from tipbench_dev.judged_runs import JudgedCell, uniform, write_cells
from tipbench_dev.servers import TipbenchServer

TOKEN = "bench-admin-token-0123456789"
EXPERIMENT = "tip-bench-load"
TARGET_P99_RATIO = 3.0


def seed(uri: str) -> None:
    """A judged experiment: 3 models × 3 prompts × 8 scenarios, both tiers."""
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(EXPERIMENT, create=True)
    scenarios = [s.id for s in load_suite().scenarios]
    cells = [
        JudgedCell(model, prompt, scenario, human=uniform(8 + i + j), auto=uniform(9 + j))
        for i, model in enumerate(("ollama:qwen2.5:0.5b", "ollama:gemma3:1b", "ollama:llama3.2:3b"))
        for j, prompt in enumerate(("v1", "v2-mentor", "v3-few-shot"))
        for scenario in scenarios
    ]
    write_cells(store.client, experiment_id, cells)


async def burst(url: str, n: int) -> list[float]:
    """`n` concurrent leaderboard reads; their latencies in seconds."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as c:

        async def one() -> float:
            started = time.perf_counter()
            response = await c.get(f"/api/bench/leaderboard/{EXPERIMENT}")
            response.raise_for_status()
            return time.perf_counter() - started

        return await asyncio.gather(*(one() for _ in range(n)))


def wait_generating(client: httpx.Client, job_id: str) -> None:
    """Until the job's model is loaded and cells are being generated."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        job = client.get(f"/api/bench/jobs/{job_id}").json()
        if job["state"] in ("failed", "succeeded", "cancelled"):
            raise SystemExit(f"the job ended before the busy burst: {job}")
        if job["phase"] == "collect" and job["cells_done"] >= 1:
            return
        time.sleep(0.5)
    raise SystemExit("the job did not start generating in time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="idle/busy bursts each")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tipbench-load-") as tmp:
        home = Path(tmp)
        uri = f"sqlite:///{home / 'mlflow.db'}"
        env = {
            "TIPBENCH_HOME": str(home),
            "TIPBENCH_ADMIN_TOKEN": TOKEN,
            "MLFLOW_TRACKING_URI": uri,
        }
        os.environ |= env
        seed(uri)
        with TipbenchServer(home / "server", env) as server:
            asyncio.run(burst(server.url, 10))  # warm up: imports, first queries
            idle = [
                x for _ in range(args.rounds) for x in asyncio.run(burst(server.url, args.requests))
            ]
            client = httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
            )
            job = client.post(
                "/api/bench/run",
                json={"models": "llamacpp:smollm2-135m", "experiment": "tip-bench-load-job",
                      "n_tips": 5, "n_scenarios": 0},
            ).json()  # fmt: skip
            try:
                wait_generating(client, job["job_id"])
                busy = [
                    x for _ in range(args.rounds)
                    for x in asyncio.run(burst(server.url, args.requests))
                ]  # fmt: skip
                still = client.get(f"/api/bench/jobs/{job['job_id']}").json()
                generating = still["state"] == "running" and still["phase"] == "collect"
            finally:
                client.post(f"/api/bench/jobs/{job['job_id']}/cancel")

    rows = {"idle": idle, "busy": busy}
    print(f"{args.requests} concurrent leaderboard reads × {args.rounds} rounds")
    print(f"{'':6} {'p50 ms':>9} {'p99 ms':>9} {'mean ms':>9}")
    for name, values in rows.items():
        print(
            f"{name:6} {percentile(values, 0.5) * 1000:9.1f} {percentile(values, 0.99) * 1000:9.1f}"
            f" {statistics.fmean(values) * 1000:9.1f}"
        )
    p50_ratio = percentile(busy, 0.5) / percentile(idle, 0.5)
    p99_ratio = percentile(busy, 0.99) / percentile(idle, 0.99)
    verdict = "PASS" if p99_ratio <= TARGET_P99_RATIO else "FAIL"
    print(f"busy/idle p50 ratio {p50_ratio:.2f}, p99 ratio {p99_ratio:.2f} "
          f"(target <= {TARGET_P99_RATIO:g}): {verdict}")  # fmt: skip
    print(f"the job was still generating at the end of the busy bursts: {generating}")
    return 0 if verdict == "PASS" and generating else 1


if __name__ == "__main__":
    raise SystemExit(main())
