#!/usr/bin/env python
"""What any generation path could do on the peers' grid: the bound under issue 46's item 5.

`peers.py` compares tipbench with tools that send each cell's plain request once and keep
whatever comes back. tipbench must end with ≥ 95 % of its cells holding n_tips tips, so where
a free answer does not parse it pays for a constrained one. This script asks how fast any
choice of requests could be, on the same grid through one `python -m llama_cpp.server`:

  1. untimed, each cell's free answer is streamed once, as collect streams it, to learn where
     collect cuts it (`AnswerDone`: n_tips tips, or a runaway) and whether it parses;
  2. then, each round in a rotating order, four loops of the bare `openai` client
     (`_baseline_openai.py`, no tipbench import), each a fresh process:

     bare        every cell's plain request, uncut: the peers' requests;
     free-first  the free request cut where collect cuts it, and the schema request where
                 it did not parse: tipbench's free-first path before free+rest;
     schema      every cell's schema request: tipbench's schema path;
     oracle      the cut free request where it parses, the schema request alone where it
                 does not: a path that knew beforehand which free answers parse;
     free+rest   free-first, but where the cut free answer holds k < n_tips tips, the
                 schema request asks only for the n_tips − k missing ones (the same
                 messages, so a server's cached prompt serves it): collect's free-first
                 path (`collect/_answer.py`).

It prints each loop's seconds as a median ratio to the bare loop's (per round, [min, max]),
its requests, tokens and the cells whose final answer holds n_tips tips. tipbench's own
paths cost at least their loop here (collect adds its records: `peers.py`'s `tipbench:off`
against `bare`), so a target below the oracle's ratio is out of reach of any path that must
generate an answer to learn whether it parses.

    python bench/paths_bound.py [--rounds 2] [--n-tips 3] [--max-tokens 160]
                                [--n-scenarios N] [--prompts v1,...]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from _arms import Replay
from _report import ArmResult, spread
from structured_server import _SCRUB, bare, plan, write
from tipbench.backends._llamacpp import resolve_model_path
from tipbench.collect import DEFAULT_PROMPTS, parse_tips, tips_schema
from tipbench_dev.servers import LlamaCppServer

LOOPS = ("bare", "free-first", "schema", "oracle", "free+rest")
REST = " (rest)"  # the name suffix of a rest request's answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--n-scenarios", type=int, default=0, help="first N scenarios (0 = all)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS)
    parser.add_argument("--n-tips", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    config, pairs = plan(args)
    names = [p["name"] for p in pairs]
    n = config.n_tips
    rounds: list[dict[str, ArmResult]] = []
    with tempfile.TemporaryDirectory(prefix="tipbench-bound-") as tmp:
        folder = Path(tmp)
        print(f"grid: {len(pairs)} cells, n_tips {n}; starting llama_cpp.server ...", flush=True)
        with LlamaCppServer(folder / "server", resolve_model_path("smollm2-135m")) as server:
            url = f"http://127.0.0.1:{server.port}/v1"
            streamed = folder / "streamed.json"
            free = write(folder / "free.json", [p["free"] for p in pairs])
            bare(free, url, streamed, env, names, n)
            pieces: dict[str, list[str]] = json.loads(streamed.read_text())["pieces"]
            replay = Replay.of(pieces, n)
            parses = {
                name: len(parse_tips("".join(pieces[name][: replay.stops.get(name)]), n).tips) >= n
                for name in names
            }
            print(f"  free answers that parse once cut: {sum(parses.values())}/{len(names)}")
            loops = requests_of(pairs, replay, parses)
            loops["free+rest"] = rest_requests(pairs, pieces, replay.stops, n)
            for number in range(1, args.rounds + 1):
                shift = (number - 1) % len(LOOPS)
                results = {}
                for loop in LOOPS[shift:] + LOOPS[:shift]:
                    path = write(folder / f"{loop}.json", loops[loop])
                    arm = bare(path, url, folder / "out.json", env, names, n)
                    if loop == "free+rest":
                        arm = replace(arm, full=rest_full(folder / "out.json", names, n))
                    results[loop] = replace(arm, requests=len(loops[loop]))
                    print(f"  round {number}: {loop} {results[loop].seconds:.2f} s", flush=True)
                rounds.append(results)
    report(rounds, len(names))
    return 0


def requests_of(
    pairs: list[dict[str, Any]], replay: Replay, parses: dict[str, bool]
) -> dict[str, list[dict[str, Any]]]:
    """Each loop's requests, in the grid's order."""
    failed = [p["name"] for p in pairs if not parses[p["name"]]]
    free_first = replay.following(dict.fromkeys(failed, "free+schema"))
    oracle = replay.following(dict.fromkeys(failed, "schema"))
    return {
        "bare": [p["free"] | {"stream": False} for p in pairs],
        "free-first": [r for p in pairs for r in free_first.requests(p)],
        "schema": [p["schema"] for p in pairs],
        "oracle": [r for p in pairs for r in oracle.requests(p)],
    }


def rest_requests(
    pairs: list[dict[str, Any]], pieces: dict[str, list[str]], stops: dict[str, int], n: int
) -> list[dict[str, Any]]:
    """Each cell's free request cut at `stops`, and where its answer holds k < n tips, a
    schema request for the n − k missing ones (the whole schema request where k = 0)."""
    requests = []
    for pair in pairs:
        name = pair["name"]
        cut = stops.get(name, len(pieces[name]))
        requests.append(pair["free"] | {"max_tokens": cut, "name": name + "#free"})
        found = len(parse_tips("".join(pieces[name][:cut]), n).tips)
        if found < n:
            schema = {"type": "json_object", "schema": tips_schema(n - found)}
            requests.append(pair["schema"] | {"response_format": schema, "name": name + REST})
    return requests


def rest_full(out: Path, names: list[str], n: int) -> int:
    """Cells whose free answer and rest answer hold n tips between them."""
    texts = json.loads(out.read_text(encoding="utf-8"))["texts"]
    return sum(
        len(parse_tips(texts.get(name + "#free", ""), n).tips)
        + len(parse_tips(texts.get(name + REST, ""), n).tips)
        >= n
        for name in names
    )


def report(rounds: list[dict[str, ArmResult]], cells: int) -> None:
    print(f"\n{len(rounds)} round(s), {cells} cells; seconds / bare per round: median [min, max]")
    print(f"{'loop':12s} {'s (median)':>10s}  {'/ bare':>22s}  requests  tokens  cells full")
    bare_s = [r["bare"].seconds for r in rounds]
    for loop in LOOPS:
        arms = [r[loop] for r in rounds]
        seconds = sorted(a.seconds for a in arms)[len(arms) // 2]
        ratio = spread(bare_s, [a.seconds for a in arms])
        last = arms[-1]
        print(f"{loop:12s} {seconds:10.2f}  {ratio:>22s}  {last.requests:8d}  "
              f"{last.tokens:6d}  {min(a.full for a in arms):5d}/{cells}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
