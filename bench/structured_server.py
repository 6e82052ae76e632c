#!/usr/bin/env python
"""Generation at the server's own speed: what constrained output costs through `llama_cpp.server`.

Most users serve models behind an OpenAI-compatible server. This script starts
llama-cpp-python's (`python -m llama_cpp.server`, SmolLM2-135M, loopback) and, in each round,
times four arms over the same grid (prompts × scenarios, the same rendered prompts, seeds
and token budget collect uses), each a fresh process, wall clock from start to exit:

  (u) a plain `openai` client loop, every request unconstrained (no `response_format`);
  (s) the same loop, every request constrained by tipbench's JSON schema (as the backend
      sends it to this server: `{"type": "json_object", "schema": ...}`), i.e. collect
      before `--structured`;
  (a) the same loop replaying the requests (b) makes: each free request, and the schema
      retry for the cells whose free answer does not parse into n_tips tips (known from
      (u)'s answers: same prompts and seeds);
  (b) `tipbench collect --models openai:smollm2@135M --no-cache` (default `--structured
      auto`) into a fresh local MLflow store.

It prints per arm wall time, time inside the requests, completion tokens, tokens/s and the
share of cells parsing into n_tips tips, and the ratios with issue 10's targets: (b)
tokens/s ≥ 0.9 × (u), ≥ 95 % of (b)'s cells with n_tips tips, (b)/(a) ≤ 1.05. The arms
run in a rotating order; other work on the machine only adds time, so each arm's best
round is reported. Exit status 0 when (b) ran and recorded every cell.

    python bench/structured_server.py [--n-scenarios N] [--prompts v1,...] [--n-tips N]
                                      [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipbench._dev.servers import LlamaCppServer
from tipbench.backends import Constraint, ModelSpec
from tipbench.backends._llamacpp import resolve_model_path
from tipbench.collect import DEFAULT_PROMPTS, CollectConfig, parse_tips, plan_grid
from tipbench.suite import load_suite

MODEL = "openai:smollm2@135M"
NONE_AND_SCHEMA: tuple[Constraint, Constraint] = ("none", "schema")
_SCRUB = ("MLFLOW_TRACKING_URI", "OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY")

# A bare client loop: no tipbench import, the official `openai` client, one request after
# the other; writes each answer's text and tokens, and the time inside the requests.
BARE_LOOP = """
import json, sys, time
import openai
spec = json.load(open(sys.argv[1], encoding="utf-8"))
client = openai.OpenAI(base_url=sys.argv[2], api_key="not-needed", max_retries=0, timeout=600)
texts, tokens, inside = {}, {}, 0.0
for r in spec["requests"]:
    extra = {"response_format": r["response_format"]} if r["response_format"] else {}
    started = time.perf_counter()
    response = client.chat.completions.create(
        model=spec["model"], messages=r["messages"], temperature=r["temperature"],
        seed=r["seed"], max_tokens=r["max_tokens"], **extra,
    )
    inside += time.perf_counter() - started
    texts[r["name"]] = response.choices[0].message.content or ""
    tokens[r["name"]] = response.usage.completion_tokens if response.usage else 0
json.dump({"texts": texts, "tokens": tokens, "inside": inside}, open(sys.argv[3], "w"))
"""


@dataclass(frozen=True)
class Arm:
    seconds: float
    inside: float
    tokens: int
    full: int
    cells: int

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.inside if self.inside else 0.0


def plan(args: argparse.Namespace) -> tuple[CollectConfig, list[dict[str, Any]]]:
    """Each cell's free and schema-constrained request, built with tipbench's own planner."""
    config = CollectConfig(
        models=[MODEL], prompts=args.prompts, n_tips=args.n_tips, n_scenarios=args.n_scenarios
    )
    suite = load_suite()
    cells = plan_grid(
        [(ModelSpec.parse(MODEL), "server")],
        [suite.prompt(v) for v in config.prompts],
        suite.select_scenarios(config.n_scenarios),
        n_tips=config.n_tips,
        temperature=config.temperature,
        seed=config.seed,
        max_tokens=config.generation_tokens,
        suite=suite.label,
    )
    pairs = []
    for cell in cells:
        wire = {}
        for constraint in NONE_AND_SCHEMA:
            request = cell.request(constraint=constraint)
            schema = request.json_schema
            wire[constraint] = {
                "name": cell.name,
                "messages": request.chat_messages(),
                "temperature": request.temperature,
                "seed": request.seed,
                "max_tokens": request.max_tokens,
                "response_format": {"type": "json_object", "schema": schema} if schema else None,
            }
        pairs.append({"name": cell.name, "free": wire["none"], "schema": wire["schema"]})
    return config, pairs


def write(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"model": "smollm2", "requests": requests}), encoding="utf-8")
    return path


def timed(
    command: list[str], env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    return time.perf_counter() - started, done


def bare(requests: Path, url: str, out: Path, env: dict[str, str], names: list[str], n: int) -> Arm:
    seconds, done = timed([sys.executable, "-c", BARE_LOOP, str(requests), url, str(out)], env)
    if done.returncode != 0:
        raise SystemExit(f"bare loop failed:\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text(encoding="utf-8"))
    full = sum(len(parse_tips(result["texts"].get(name, ""), n).tips) >= n for name in names)
    return Arm(seconds, result["inside"], sum(result["tokens"].values()), full, len(names))


def collect_arm(
    config: CollectConfig, url: str, folder: Path, env: dict[str, str]
) -> tuple[Arm, dict[str, int]]:
    from mlflow import MlflowClient

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    script = Path(sys.executable).parent / "tipbench"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "tipbench.cli"]
    command += [
        "collect", "--models", MODEL, "--openai-base-url", url,
        "--prompts", ",".join(config.prompts), "--n-scenarios", str(config.n_scenarios),
        "--n-tips", str(config.n_tips), "--experiment", "bench-structured",
        "--tracking-uri", uri, "--no-cache",
    ]  # fmt: skip
    seconds, done = timed(command, env | {"TIPBENCH_HOME": str(folder / "home")})
    if done.returncode != 0:
        print(f"  (b) exited {done.returncode}:\n{done.stderr[-2000:]}", flush=True)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("bench-structured")
    runs = client.search_runs([exp.experiment_id], "tags.`tipbench.kind` = 'cell'") if exp else []
    paths: dict[str, int] = {}
    for run in runs:
        path = run.data.tags.get("generation_path", "?")
        paths[path] = paths.get(path, 0) + 1
    arm = Arm(
        seconds,
        sum(r.data.metrics.get("latency_s", 0.0) for r in runs),
        int(sum(r.data.metrics.get("completion_tokens", 0) for r in runs)),
        sum(r.data.metrics.get("candidate_count", 0) >= config.n_tips for r in runs),
        len(runs),
    )
    return arm, paths


LABELS = {
    "u": "(u) unconstrained",
    "s": "(s) schema, every request",
    "a": "(a) replay of (b)'s requests",
    "b": "(b) tipbench collect (auto)",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--n-scenarios", type=int, default=0, help="first N scenarios (0 = all)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS)
    parser.add_argument("--n-tips", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    config, pairs = plan(args)
    names = [p["name"] for p in pairs]
    n = config.n_tips
    rounds: list[dict[str, Arm]] = []
    all_paths: list[dict[str, int]] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="tipbench-bench-") as tmp:
        folder = Path(tmp)
        free = write(folder / "free.json", [p["free"] for p in pairs])
        schema = write(folder / "schema.json", [p["schema"] for p in pairs])
        print(f"grid: {len(pairs)} cells, n_tips {n}; starting llama_cpp.server ...", flush=True)
        with LlamaCppServer(folder / "server", resolve_model_path("smollm2-135m")) as server:
            url = f"http://127.0.0.1:{server.port}/v1"
            # untimed warm-up: the first answers page the model in; (u) decides (a)'s retries
            warm = bare(free, url, folder / "warm.json", env, names, n)
            texts = json.loads((folder / "warm.json").read_text())["texts"]
            retried = {k for k in names if len(parse_tips(texts[k], n).tips) < n}
            replay = write(
                folder / "replay.json",
                [
                    r
                    for p in pairs
                    for r in (
                        [p["free"] | {"name": p["name"] + "#free"}, p["schema"]]
                        if p["name"] in retried
                        else [p["free"]]
                    )
                ],
            )
            print(f"  warm-up done ({warm.seconds:.1f} s); (a) has {len(retried)} retries")
            order = ["u", "s", "a", "b"]
            for number in range(1, args.repeat + 1):
                arms: dict[str, Arm] = {}
                for key in order[number - 1 :] + order[: number - 1]:  # rotate the order
                    work = folder / f"round-{number}-{key}"
                    work.mkdir()
                    if key == "b":
                        arms[key], paths = collect_arm(config, url, work, env)
                        all_paths.append(paths)
                        ok = ok and arms[key].cells == len(names)
                    else:
                        requests = {"u": free, "s": schema, "a": replay}[key]
                        arms[key] = bare(requests, url, work / "out.json", env, names, n)
                    print(f"  round {number}: {LABELS[key]} {arms[key].seconds:.2f} s", flush=True)
                rounds.append(arms)
    print()
    print(f"{len(names)} cells ({', '.join(config.prompts)}), n_tips {n}, via llama_cpp.server")
    print(
        f"{'arm':<32} {'wall s':>8} {'in requests s':>14} {'tokens':>7} {'tokens/s':>9}"
        f" {'cells with n_tips':>18}"
    )
    best = {key: min((r[key] for r in rounds), key=lambda a: a.seconds) for key in LABELS}
    for key, label in LABELS.items():
        arm = best[key]
        share = arm.full / max(arm.cells, 1)
        print(
            f"{label:<32} {arm.seconds:>8.2f} {arm.inside:>14.2f} {arm.tokens:>7}"
            f" {arm.tokens_per_s:>9.1f} {f'{arm.full}/{arm.cells}':>12} {share:>5.0%}"
        )
    print(f"(b) generation paths per round: {all_paths}")
    speed = best["b"].tokens_per_s / best["u"].tokens_per_s
    share = best["b"].full / max(best["b"].cells, 1)
    overhead = best["b"].seconds / best["a"].seconds
    met = {True: "met", False: "NOT met"}
    print(f"(s)/(u) tokens/s:             {best['s'].tokens_per_s / best['u'].tokens_per_s:.3f}")
    print(f"(b)/(u) tokens/s:             {speed:.3f}   target ≥ 0.90   {met[speed >= 0.9]}")
    print(f"(b) cells with n_tips tips:   {share:.1%}   target ≥ 95%    {met[share >= 0.95]}")
    print(f"(b)/(a) wall clock:           {overhead:.3f}   target ≤ 1.05   {met[overhead <= 1.05]}")
    print(f"(b)/(s) wall clock:           {best['b'].seconds / best['s'].seconds:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
