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
  (b) `tipbench collect --models openai:smollm2@135M --no-cache` (default `--structured
      auto`) into a new local MLflow store (from a home whose store template is built:
      `_arms.prepared_home`);
  (a) the same loop replaying the requests (b) made: per cell the path (b) took (free, free
      then schema, or schema), free answers streamed and cut where collect cuts them;
  (b:schema), (b:off) the same collect with `--structured schema` and `--structured off`;
  (b1) the same as (b) from a home of its own: a first collect, which asks the probe that
      chooses the model's path (`docs/collect.md`); (b) and the others run from a home that
      remembers it, as any later collect does (learned, untimed, before the first round).

Each arm's generation requests are counted in the server's access log and printed per round,
so that a change of path between rounds shows.

It prints per arm wall time, time inside the requests, completion tokens, tokens/s and the
share of cells parsing into n_tips tips, and the ratios with their targets: (b) tokens/s
≥ 0.9 × (u), ≥ 95 % of (b)'s cells with n_tips tips, and, as medians of per-round ratios
with their range, (b)/(a) ≤ 1.05 and (b)/faster of (b:schema), (b:off) ≤ 1.05; and issue
46's bars for a later collect (b) and a first one (b1): / (b:schema) ≤ 1.05 on equal work and
/ (b:off) ≤ 1.05 in seconds per usable tip (free-only leaves cells short). (u), (s) and the
collect arms run in a rotating order, (a) right after (b), which it replays. Exit status 0
when (b) ran and recorded every cell.

The bare loop is `_baseline_openai.py`; the requests and the replay are built as
`collect_overhead.py` builds them (`_arms.py`), and the table is printed by `_report.py`.

    python bench/structured_server.py [--n-scenarios N] [--prompts v1,...] [--n-tips N]
                                      [--repeat K] [--server-cpus 0] [--arms b,bs]
                                      [--llama-server PATH | --serve-model]

`--arms` times only those arms (e.g. `b,bs`: the default and `--structured schema`, side by
side in alternating order, for more rounds in the same time).

`--server-cpus` pins the server to those CPUs (one thread each) and every arm to the others
(`_arms.pin_server`). `--llama-server` runs the grid on llama.cpp's own `llama-server` (the
binary `build_llama_server.sh` builds), whose grammar check costs little (README);
`--serve-model` on `tipbench serve-model` (llama_cpp.server whose grammar is checked on a
shortlist first, as the embedded backend samples).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _arms import (
    Replay,
    add_server_options,
    full_cells,
    model_server,
    paths_of,
    pin_server,
    prepared_home,
    request_pair,
    server_name,
    tipbench_command,
)
from _report import ARM_LABELS, ArmResult, print_arms
from tipbench.backends import ModelSpec
from tipbench.backends._llamacpp import resolve_model_path
from tipbench.collect import DEFAULT_PROMPTS, CollectConfig, plan_grid
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS

MODEL = "openai:smollm2@135M"
_SCRUB = ("MLFLOW_TRACKING_URI", "OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY")
# The bare arms: the official `openai` client in a loop, a program that imports no tipbench.
BASELINE = Path(__file__).resolve().with_name("_baseline_openai.py")
ARMS = ("u", "s", "b", "a", "b1", "bs", "bo")  # every arm, in the first round's order


def plan(args: argparse.Namespace) -> tuple[CollectConfig, list[dict[str, Any]]]:
    """Each cell's free and schema-constrained request, built with tipbench's own planner."""
    config = CollectConfig(
        models=[MODEL],
        prompts=args.prompts,
        n_tips=args.n_tips,
        n_scenarios=args.n_scenarios,
        max_tokens=getattr(args, "max_tokens", None),  # peers.py's --max-tokens
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
    return config, [request_pair(cell) for cell in cells]


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


def bare(
    requests: Path, url: str, out: Path, env: dict[str, str], names: list[str], n: int
) -> ArmResult:
    seconds, done = timed([sys.executable, str(BASELINE), str(requests), url, str(out)], env)
    if done.returncode != 0:
        raise SystemExit(f"bare loop failed:\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text(encoding="utf-8"))
    full = full_cells(result["texts"], names, n)
    return ArmResult(seconds, result["inside"], sum(result["tokens"].values()), full, len(names))


def collect_arm(
    config: CollectConfig, url: str, folder: Path, env: dict[str, str], mode: str = "auto"
) -> tuple[ArmResult, dict[str, str]]:
    """A run of `tipbench collect` in structured `mode`, and each cell's generation path."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    command = [
        *tipbench_command(), "collect", "--models", MODEL, "--openai-base-url", url,
        "--prompts", ",".join(config.prompts), "--n-scenarios", str(config.n_scenarios),
        "--n-tips", str(config.n_tips), "--experiment", "bench-structured",
        "--tracking-uri", uri, "--structured", mode, "--no-cache",
        *(["--max-tokens", str(config.max_tokens)] if config.max_tokens else []),
    ]  # fmt: skip
    seconds, done = timed(command, env)
    if done.returncode != 0:
        print(f"  (b) exited {done.returncode}:\n{done.stderr[-2000:]}", flush=True)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("bench-structured")
    runs = client.search_runs([exp.experiment_id], CELL_RUNS) if exp else []
    arm = ArmResult(
        seconds,
        sum(r.data.metrics.get("latency_s", 0.0) for r in runs),
        int(sum(r.data.metrics.get("completion_tokens", 0) for r in runs)),
        sum(r.data.metrics.get("candidate_count", 0) >= config.n_tips for r in runs),
        len(runs),
        tips=int(sum(r.data.metrics.get("candidate_count", 0) for r in runs)),
    )
    return arm, paths_of(runs)


def report(number: int, key: str, arm: ArmResult) -> None:
    print(
        f"  round {number}: {ARM_LABELS[key]} {arm.seconds:.2f} s "
        f"({arm.request_seconds:.2f} s in requests, {arm.requests} requests)",
        flush=True,
    )


def remembering(config: CollectConfig) -> CollectConfig:
    """The smallest grid whose probe is `config`'s: the same prompts, the first three
    scenarios at most (the probe asks no further one)."""
    scenarios = config.n_scenarios if 0 < config.n_scenarios < 3 else 3
    return config.model_copy(update={"n_scenarios": scenarios})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--n-scenarios", type=int, default=0, help="first N scenarios (0 = all)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS)
    parser.add_argument("--n-tips", type=int, default=5)
    parser.add_argument("--server-cpus", default="", help="the server's CPUs (e.g. 0)")
    add_server_options(parser)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--arms",
        default=",".join(ARMS),
        help="the arms to time, in this order before rotating (e.g. b,bs: the default against "
        "--structured schema alone; (a) replays (b) and needs it)",
    )
    args = parser.parse_args()
    order = args.arms.split(",")
    if not set(order) <= set(ARMS) or ("a" in order and "b" not in order):
        parser.error(f"--arms: a subset of {','.join(ARMS)}, with b wherever a is")
    cpus = pin_server(args.server_cpus)
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    config, pairs = plan(args)
    names = [p["name"] for p in pairs]
    n = config.n_tips
    rounds: list[dict[str, ArmResult]] = []
    all_paths: list[dict[str, int]] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="tipbench-bench-") as tmp:
        folder = Path(tmp)
        env = prepared_home(folder, env)
        free = write(folder / "free.json", [p["free"] for p in pairs])
        schema = write(folder / "schema.json", [p["schema"] for p in pairs])
        serving = server_name(args)
        print(f"grid: {len(pairs)} cells, n_tips {n}; starting {serving} ...", flush=True)
        model = resolve_model_path("smollm2-135m")
        with model_server(folder, model, args, cpus) as server:
            url = f"http://127.0.0.1:{server.port}/v1"
            # untimed warm-up: the first answers page the model in; (u) says where collect
            # cuts each free answer
            warm = bare(free, url, folder / "warm.json", env, names, n)
            pieces = json.loads((folder / "warm.json").read_text())["pieces"]
            replay = Replay.of(pieces, n)
            print(f"  warm-up done ({warm.seconds:.1f} s)")
            # untimed: the shared home learns the model's path, as after a first collect
            collect_arm(remembering(config), url, folder / "remember", env)
            modes = {"b": "auto", "b1": "auto", "bs": "schema", "bo": "off"}
            for number in range(1, args.repeat + 1):
                arms: dict[str, ArmResult] = {}
                shift = (number - 1) % len(order)
                for key in order[shift:] + order[:shift]:  # rotate the order
                    if key == "a":
                        continue  # run right after (b), below
                    work = folder / f"round-{number}-{key}"
                    work.mkdir()
                    before = server.completions()
                    if key in modes:  # (b1): a first collect, from a home of its own
                        home = prepared_home(work, env) if key == "b1" else env
                        arms[key], cell_paths = collect_arm(config, url, work, home, modes[key])
                    else:
                        requests = {"u": free, "s": schema}[key]
                        arms[key] = bare(requests, url, work / "out.json", env, names, n)
                    arms[key] = replace(arms[key], requests=server.completions() - before)
                    report(number, key, arms[key])
                    if key == "b":
                        ok = ok and arms[key].cells == len(names)
                        counts: dict[str, int] = {}
                        for path in cell_paths.values():
                            counts[path] = counts.get(path, 0) + 1
                        all_paths.append(counts)
                    if key == "b" and "a" in order:  # (a) replays what (b) just did
                        replayed = write(
                            work / "replay.json",
                            [r for p in pairs for r in replay.following(cell_paths).requests(p)],
                        )
                        before = server.completions()
                        arms["a"] = bare(replayed, url, work / "a.json", env, names, n)
                        arms["a"] = replace(arms["a"], requests=server.completions() - before)
                        report(number, "a", arms["a"])
                rounds.append(arms)
    print()
    pinned = f" on CPU {args.server_cpus}" if cpus else ""
    print(f"{len(names)} cells ({', '.join(config.prompts)}), n_tips {n}, {serving}{pinned}")
    print_arms(rounds, all_paths)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
