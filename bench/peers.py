#!/usr/bin/env python
"""Peers on one grid: tipbench collect, a bare `openai` loop, promptfoo and Inspect AI.

All tools run the same grid (tipbench's prompts rendered once for the suite's scenarios: the
same chat messages, temperature, seed, token limit and no repeat penalty per cell, which
each tool says outright: the server's default is 1.1) against one
`python -m llama_cpp.server` (SmolLM2-135M, loopback), each a fresh process timed from start
to exit, in a rotating order per round:

  bare       the official `openai` client in a loop, one plain request per cell
             (`_baseline_openai.py`, no tipbench import): the baseline;
  tipbench   `tipbench collect --models openai:smollm2@135M --no-cache` (its defaults:
             `--structured auto`, free answers streamed and cut once they hold n_tips tips,
             a schema-constrained retry where they do not parse) into a new local store
             (its home's store template built, and the model's path remembered, as after a
             first collect: an untimed collect of at most three scenarios before round 1);
  tipbench:off  the same collect with `--structured off`: free answers only, the peers' kind
             of request (streamed and cut), no retry; where (tipbench) is slower than a peer
             this says how much of the gap is the retries the peers do not make;
  promptfoo  `promptfoo eval` (npm, pinned in bench/peers/package.json; `npm ci --prefix
             bench/peers`), its openai provider pointed at the server, cache, telemetry,
             sharing and update checks off;
  inspect    `inspect eval` (Inspect AI, the `peers` extra), an `openai-api` model pointed
             at the server, a task with one sample per cell and no scorer.

A peer that is not installed is skipped with one line. Every tool sends one request at a time,
as collect does by default (one server generates one answer at a time anyway). Printed per
tool: the median wall clock over the rounds, its per-round ratio to the bare loop (median [min,
max]), the chat completions the server answered for it (its access log), completion tokens and
their ratio to the bare loop's, the cells whose answer parses into n_tips tips, and how many
cells got the very answer the bare loop got (all of them for a peer that sent the same request;
collect's answers are cut and retried, so not compared); then the target of issue 24:
tipbench's wall clock ≤ promptfoo's and Inspect AI's, and of issue 46: ≤ 0.95 × the faster
of the two in each round, with ≥ 95 % of its cells holding n_tips tips (medians of the
per-round ratios). Exit status 0 when every arm that ran generated every cell.

    python bench/peers.py [--rounds 3] [--n-scenarios N] [--prompts v1,...] [--n-tips N]
                          [--max-tokens N]
                          [--tools bare,tipbench,tipbench:off,promptfoo,inspect]
                          [--server-cpus 0]   (as structured_server.py's)
                          [--llama-server PATH]   (llama.cpp's own server, not
                                                  llama-cpp-python's: build_llama_server.sh)
                          [--serve-model]   (`tipbench serve-model`: llama_cpp.server
                                            sampling as the embedded backend does)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from _arms import (
    add_server_options,
    full_cells,
    model_server,
    pin_server,
    prepared_home,
    server_name,
)
from _report import ArmResult, spread
from structured_server import _SCRUB, bare, collect_arm, plan, remembering, write
from tipbench.backends._llamacpp import resolve_model_path
from tipbench.collect import DEFAULT_PROMPTS, CollectConfig

TOOLS = ("bare", "tipbench", "tipbench:off", "promptfoo", "inspect")
HERE = Path(__file__).resolve().parent
# `npx promptfoo` resolves to this script once `npm ci --prefix bench/peers` has run; calling
# it directly leaves npx's own start-up out of promptfoo's time
PROMPTFOO = HERE / "peers" / "node_modules" / ".bin" / "promptfoo"
# a promptfoo prompt function: each test names its cell, whose rendered messages it returns
PROMPT_JS = """const cells = require('./cells.json');
module.exports = ({ vars }) => cells[vars.cell];
"""
PROMPTFOO_ENV = {
    "PROMPTFOO_CACHE_ENABLED": "false",
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_RUNTIME_WARNINGS": "1",  # Node 20 is past promptfoo's support window
}


class Grid:
    """The cells every tool generates: each cell's plain request, by run name."""

    def __init__(self, config: CollectConfig, requests: list[dict[str, Any]]) -> None:
        self.config = config
        self.requests = requests
        self.names = [r["name"] for r in requests]
        # one setting for the whole grid: the peers take them once, not per cell
        settings = {
            (r["temperature"], r["seed"], r["max_tokens"], r["repeat_penalty"]) for r in requests
        }
        if len(settings) != 1:
            raise SystemExit(f"the grid mixes request settings: {sorted(settings)}")
        self.temperature, self.seed, self.max_tokens, self.repeat_penalty = settings.pop()

    def measured(self, seconds: float, texts: dict[str, str], tokens: int) -> Outcome:
        """An arm's result from its answers by cell name."""
        full = full_cells(texts, self.names, self.config.n_tips)
        return Outcome(ArmResult(seconds, 0.0, tokens, full, len(texts)), texts)


@dataclass(frozen=True)
class Outcome:
    """What one tool did in a round, and its answers by cell where they are the plain
    requests' (collect's are cut and retried, so they are not compared)."""

    arm: ArmResult
    texts: dict[str, str] | None = None
    requests: int = 0  # generation requests the server answered meanwhile


Arm = Callable[[Path], Outcome]


def run(command: list[str], env: dict[str, str], cwd: Path, what: str) -> float:
    """Seconds from start to exit of `command`; a failure stops the benchmark."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{what} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    return seconds


def promptfoo_arm(grid: Grid, url: str, env: dict[str, str]) -> Arm:
    """`promptfoo eval` of the grid: one prompt function, one test per cell."""

    def arm(work: Path) -> Outcome:
        cells = {r["name"]: r["messages"] for r in grid.requests}
        (work / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
        (work / "prompt.js").write_text(PROMPT_JS, encoding="utf-8")
        provider = {
            "id": "openai:chat:smollm2",
            "config": {
                "apiBaseUrl": url,
                "apiKey": "not-needed",
                "temperature": grid.temperature,
                "seed": grid.seed,
                "max_tokens": grid.max_tokens,
                "passthrough": {"repeat_penalty": grid.repeat_penalty},  # not the server's 1.1
            },
        }
        config = {
            "description": "tipbench peers",
            "prompts": ["file://prompt.js"],
            "providers": [provider],
            "tests": [{"vars": {"cell": name}} for name in grid.names],
        }
        (work / "promptfooconfig.json").write_text(json.dumps(config), encoding="utf-8")
        command = [
            str(PROMPTFOO), "eval", "--config", "promptfooconfig.json", "--no-cache",
            "--max-concurrency", "1", "--output", "results.json",
        ]  # fmt: skip
        home = env | PROMPTFOO_ENV | {"PROMPTFOO_CONFIG_DIR": str(work / "home")}
        seconds = run(command, home, work, "promptfoo eval")
        rows = json.loads((work / "results.json").read_text(encoding="utf-8"))["results"]
        texts, tokens = {}, 0
        for row in rows["results"]:
            response = row.get("response") or {}
            texts[row["vars"]["cell"]] = str(response.get("output", ""))
            tokens += (response.get("tokenUsage") or {}).get("completion", 0)
        return grid.measured(seconds, texts, tokens)

    return arm


# an Inspect AI task: one sample per cell holding its rendered messages, no scorer
INSPECT_TASK = """import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import generate

ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


@task
def peers():
    cells = json.loads((Path(__file__).parent / "cells.json").read_text())
    samples = [
        Sample(id=name, input=[ROLES[m["role"]](content=m["content"]) for m in messages])
        for name, messages in cells.items()
    ]
    return Task(dataset=samples, solver=generate())
"""


def inspect_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("inspect_ai") is not None


def inspect_arm(grid: Grid, url: str, env: dict[str, str]) -> Arm:
    """`inspect eval` of the grid through an OpenAI-compatible model at the server."""

    def arm(work: Path) -> Outcome:
        from inspect_ai.log import list_eval_logs, read_eval_log

        cells = {r["name"]: r["messages"] for r in grid.requests}
        (work / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
        (work / "peers_task.py").write_text(INSPECT_TASK, encoding="utf-8")
        command = [
            str(Path(sys.executable).parent / "inspect"), "eval", "peers_task.py",
            "--model", "openai-api/llamacpp/smollm2", "--model-base-url", url,
            "--temperature", str(grid.temperature), "--seed", str(grid.seed),
            "--max-tokens", str(grid.max_tokens), "--max-connections", "1",
            "--extra-body", json.dumps({"repeat_penalty": grid.repeat_penalty}),
            # said outright: beside click 8.4 these flags come on unless given (cache 7D,
            # batch 100), and a cached answer is no request at all
            "--cache", "false", "--batch", "false", "--log-dir", str(work / "logs"),
        ]  # fmt: skip
        # a fresh cache folder too, so that nothing an earlier run cached can answer
        fresh = {"LLAMACPP_API_KEY": "not-needed", "INSPECT_CACHE_DIR": str(work / "cache")}
        seconds = run(command, env | fresh, work, "inspect eval")
        log = read_eval_log(list_eval_logs(str(work / "logs"))[0])
        texts, tokens = {}, 0
        for sample in log.samples or []:
            texts[str(sample.id)] = sample.output.completion
            usage = sample.output.usage
            tokens += usage.output_tokens if usage else 0
        return grid.measured(seconds, texts, tokens)

    return arm


def arms(
    grid: Grid, url: str, folder: Path, env: dict[str, str], tools: list[str]
) -> dict[str, Arm]:
    """The arms to time, by tool: each runs the grid once in a fresh work folder."""
    requests = write(folder / "requests.json", grid.requests)

    def bare_arm(work: Path) -> Outcome:
        arm = bare(requests, url, work / "out.json", env, grid.names, grid.config.n_tips)
        texts = json.loads((work / "out.json").read_text(encoding="utf-8"))["texts"]
        return Outcome(arm, texts)

    def tipbench_arm(mode: str) -> Arm:
        return lambda work: Outcome(collect_arm(grid.config, url, work, env, mode)[0])

    available: dict[str, Arm] = {
        "bare": bare_arm,
        "tipbench": tipbench_arm("auto"),
        "tipbench:off": tipbench_arm("off"),
    }
    if "promptfoo" in tools:
        if PROMPTFOO.is_file():
            available["promptfoo"] = promptfoo_arm(grid, url, env)
        else:
            print("promptfoo: not installed (npm ci --prefix bench/peers), skipped")
    if "inspect" in tools:
        if inspect_installed():
            available["inspect"] = inspect_arm(grid, url, env)
        else:
            print("inspect: Inspect AI not installed (pip install 'tipbench[peers]'), skipped")
    return {tool: available[tool] for tool in tools if tool in available}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-scenarios", type=int, default=0, help="first N scenarios (0 = all)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS)
    parser.add_argument("--n-tips", type=int, default=5)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="per cell [default: collect's, 64·n_tips+48]"
    )
    parser.add_argument("--server-cpus", default="", help="the server's CPUs (e.g. 0)")
    add_server_options(parser)
    parser.add_argument("--tools", default=",".join(TOOLS), help="bare is always run")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (server and tool logs)")
    args = parser.parse_args()
    cpus = pin_server(args.server_cpus)
    tools = ["bare", *[t for t in args.tools.split(",") if t in TOOLS and t != "bare"]]
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    config, pairs = plan(args)
    grid = Grid(config, [p["free"] | {"stream": False} for p in pairs])
    rounds: list[dict[str, Outcome]] = []
    with tempfile.TemporaryDirectory(prefix="tipbench-peers-") as tmp:
        folder = args.keep or Path(tmp)
        env = prepared_home(folder, env)
        pinned = f" (the server on CPU {args.server_cpus})" if cpus else ""
        print(f"grid: {len(grid.names)} cells, n_tips {config.n_tips}, temperature "
              f"{grid.temperature}, seed {grid.seed}, max_tokens {grid.max_tokens}, "
              f"repeat_penalty {grid.repeat_penalty}; "
              f"starting {server_name(args)}{pinned} ...", flush=True)  # fmt: skip
        model = resolve_model_path("smollm2-135m")
        with model_server(folder, model, args, cpus) as server:
            url = f"http://127.0.0.1:{server.port}/v1"
            timed = arms(grid, url, folder, env, tools)
            (folder / "warm-up").mkdir()
            warm = timed["bare"](folder / "warm-up")  # untimed: pages the model in
            # untimed: the home learns the model's path, as after a first collect
            collect_arm(remembering(config), url, folder / "remember", env)
            print(f"  warm-up done ({warm.arm.seconds:.1f} s)", flush=True)
            order = list(timed)
            for number in range(1, args.rounds + 1):
                results: dict[str, Outcome] = {}
                shift = (number - 1) % len(order)
                for tool in order[shift:] + order[:shift]:  # rotate the order
                    work = folder / f"round-{number}-{tool}"
                    work.mkdir()
                    before = server.completions()
                    results[tool] = timed[tool](work)
                    results[tool] = replace(results[tool], requests=server.completions() - before)
                    seconds, requests = results[tool].arm.seconds, results[tool].requests
                    print(f"  round {number}: {tool} {seconds:.2f} s, {requests} requests")
                rounds.append(results)
    print()
    report(rounds, len(grid.names))
    done = all(o.arm.cells == len(grid.names) for r in rounds for o in r.values())
    return 0 if done else 1


def same_answers(rounds: list[dict[str, Outcome]], tool: str) -> str:
    """How many cells got the bare loop's answer in the same round (the fewest over rounds):
    all of them when a tool sent the same messages, seed, temperature and token limit."""
    counts = []
    for r in rounds:
        ours, theirs = r["bare"].texts or {}, r[tool].texts
        if theirs is None:
            return "—"
        counts.append(sum(theirs.get(name) == text for name, text in ours.items()))
    return f"{min(counts)}/{len(rounds[0]['bare'].texts or {})}"


def report(rounds: list[dict[str, Outcome]], cells: int) -> None:
    """Each tool's wall clock and tokens as ratios to the bare loop's, round by round."""
    base = [r["bare"].arm.seconds for r in rounds]
    base_tokens = statistics.median(r["bare"].arm.tokens for r in rounds)
    print(f"{len(rounds)} round(s), {cells} cells; ratios are per round: median [min, max]")
    print(f"{'tool':<13} {'wall s':>8} {'wall / bare':>26} {'requests':>9} {'tokens':>7}"
          f" {'tokens / bare':>14} {'cells with n_tips':>18} {'answers as bare':>16}")  # fmt: skip
    for tool in rounds[0]:
        seconds = [r[tool].arm.seconds for r in rounds]
        tokens = statistics.median(r[tool].arm.tokens for r in rounds)
        full = min(r[tool].arm.full for r in rounds)
        done = min(r[tool].arm.cells for r in rounds)
        requests = statistics.median(r[tool].requests for r in rounds)
        print(f"{tool:<13} {statistics.median(seconds):>8.2f} {spread(base, seconds):>26}"
              f" {requests:>9.0f} {tokens:>7.0f} {tokens / max(base_tokens, 1):>14.3f}"
              f" {f'{full}/{done}':>18} {same_answers(rounds, tool):>16}")  # fmt: skip
    if "tipbench" not in rounds[0]:
        return
    ours = [r["tipbench"].arm.seconds for r in rounds]
    for peer in ("promptfoo", "inspect"):
        if peer in rounds[0]:
            theirs = [r[peer].arm.seconds for r in rounds]
            ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
            verdict = "met" if ratio <= 1.0 else "NOT met"
            print(f"tipbench / {peer} wall clock: {spread(theirs, ours)}"
                  f"   target median ≤ 1.00   {verdict}")  # fmt: skip
            if ratio > 1.0:
                print(f"  why: {why(rounds, peer)}")
    peers = [p for p in ("promptfoo", "inspect") if p in rounds[0]]
    if peers:  # issue 46: ahead of the fastest peer, with the cells usable
        fastest = [min(r[p].arm.seconds for p in peers) for r in rounds]
        ratio = statistics.median(a / b for a, b in zip(ours, fastest, strict=True))
        full = min(r["tipbench"].arm.full / max(r["tipbench"].arm.cells, 1) for r in rounds)
        met = ratio <= 0.95 and full >= 0.95
        print(f"tipbench / the fastest peer wall clock: {spread(fastest, ours)}   target "
              f"median ≤ 0.95 with ≥ 95% cells holding n_tips tips ({full:.0%})   "
              f"{'met' if met else 'NOT met'}")  # fmt: skip


def why(rounds: list[dict[str, Outcome]], peer: str) -> str:
    """Where collect's extra time against `peer` comes from: the work the peer does not do
    (more requests, more tokens, for usable cells) and what collect costs doing the peer's."""

    def median(tool: str, value: Callable[[Outcome], float]) -> float:
        return statistics.median(value(r[tool]) for r in rounds)

    ours, theirs = rounds[0]["tipbench"].arm, rounds[0][peer].arm
    tokens = median("tipbench", lambda o: o.arm.tokens) / max(
        median(peer, lambda o: o.arm.tokens), 1
    )
    parts = [
        f"collect made {median('tipbench', lambda o: o.requests):.0f} requests to "
        f"{median(peer, lambda o: o.requests):.0f}, generated {tokens:.2f}× the tokens and "
        f"ended with {ours.full}/{ours.cells} cells holding n_tips tips to "
        f"{theirs.full}/{theirs.cells}"
    ]  # fmt: skip
    if "tipbench:off" in rounds[0]:
        off = [r["tipbench:off"].arm.seconds for r in rounds]
        theirs_s = [r[peer].arm.seconds for r in rounds]
        parts.append(f"free-only collect (the peer's requests) / {peer}: {spread(theirs_s, off)}")
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
