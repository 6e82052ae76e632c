#!/usr/bin/env python
"""What does `tipbench collect` cost on top of the generations it makes?

One cold grid (embedded model, prompts × scenarios, fresh store, no cache) is timed in
several arms, each a fresh process, wall clock from process start to exit:

  (b) `tipbench collect` into a real `mlflow server` (loopback, proxied artifacts), with a
      fresh TIPBENCH_HOME and --no-cache, in its default structured mode (`auto`: per model,
      free generation with a schema-constrained retry, or schema first, whichever its cells
      show to be faster);
  (a) baseline: plain llama-cpp-python in a loop, making the SAME requests (b) made (its
      cells' paths read from MLflow; same rendered prompts, seeds, max tokens, JSON schema,
      free answers cut where collect cuts them) with the same model settings (n_ctx, plain
      CPU buffers, the threads it chooses) and grammar sampling (the shortlist);
  (b:schema), (b:off) `tipbench collect --structured schema` and `--structured off`: the
      default against the faster of always constraining and never constraining (issues 24,
      34: target ≤ 1.05 on the 24-cell grid and on the README's 9 cells, `--readme-grid`);
  (b1) the same as (b), first in the round's new home: a user's first collect, which asks
      the probe that chooses the model's path and remembers its answers (issue 36); (b),
      (b0) and the modes run after it, as later collects do, choosing from memory;
  (b0) `tipbench collect --no-genai-records`: (b) without MLflow's GenAI records (a trace
      per cell, the rules' flags as assessments, the prompts in the Prompt Registry), run
      next to (b) in every round, before it in odd rounds and after it in even ones: what
      the records cost (issue 22);
  (u) plain llama-cpp-python, the same prompts sent unconstrained (no schema, no grammar):
      the backend's own speed;
  (t) plain llama-cpp-python, every request constrained by the JSON schema, the grammar
      checked on a shortlist first as the embedded backend does;
  (s) with --with-s, the same with llama-cpp-python's own grammar check (every token of the
      vocabulary): what every request cost before `--structured` and the shortlist.

Per arm it prints wall time, completion tokens, tokens/s (inside the requests) and the share
of cells parsing into n_tips tips, with the targets (printed, not part of the exit status):
(b) tokens/s ≥ 0.9 × (u), ≥ 95 % of (b)'s cells with n_tips tips, and, as medians of the
per-round ratios with their range, (b)/(a) ≤ 1.05 and (b)/faster of (b:schema), (b:off)
≤ 1.05; issue 46's bars for (b) and (b1): / (b:schema) ≤ 1.05 on equal work and / (b:off)
≤ 1.05 in seconds per usable tip; each arm's generation requests per round (collect's from
its parent run's `requests` metric), so that a change of path between rounds shows.

It prints b/a (target ≤ 1.10) and b0/a, what the GenAI records add (b/b0, target ≤ 1.02:
b/a grows by at most 2 %), the model loads per grid (must equal the number of models),
and the cost of a warm re-run of (b): the same command again, which resumes every cell from
MLflow (the cold run used --no-cache, so nothing comes from the response cache), relative
to (a). (b) runs before (a) in every round, as (a) replays it. Before each timed run the
script waits (up to --quiet-wait seconds) for other processes to go idle, and it reports the
CPU they used meanwhile.

    python bench/collect_overhead.py [--n-scenarios N] [--prompts v1,v2-mentor]
                                     [--n-tips N] [--readme-grid] [--repeat K] [--threads T]
                                     [--quiet-wait SECONDS] [--with-s]

Exit status: 0 if b/a ≤ 1.10, every cold grid loaded each model once, MLflow holds one
FINISHED run per cell after the cold and the warm run, and one trace per cell of (b) (none
of (b0)); 1 otherwise.

(a), (u), (t) and (s) run `_baseline_llamacpp.py`, which imports no tipbench; the requests come
from `_arms.py`, the CPU metering from `_cpu.py`, the ratios and the arms' table from
`_report.py`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _baseline_llamacpp
from _arms import (
    Replay,
    collect_requests,
    full_cells,
    paths_of,
    request_pair,
    tipbench_command,
)
from _cpu import CpuMeter, Timed, run_timed
from _report import ArmResult, best_ratio, median_ratio, print_arms, spread
from tipbench.backends import BackendOptions, open_backend
from tipbench.backends._llamacpp import LlamaCppBackend, plain_cpu_buffers
from tipbench.collect import DEFAULT_PROMPTS, CollectConfig, plan_grid
from tipbench.suite import load_suite
from tipbench.tracking import CELL_RUNS
from tipbench_dev.servers import MlflowServer

TARGET = 1.10
#: The README's grid (`--readme-grid`): the default prompts on the first 3 scenarios.
README_SCENARIOS = 3
#: What MLflow's GenAI records may add: b/a with them over b0/a without (issue 22).
GENAI_TARGET = 1.02
# Environment that would point either side somewhere else.
_SCRUB = (
    "MLFLOW_TRACKING_URI",
    "OLLAMA_HOST",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "TIPBENCH_HOME",
)

# (a), (u), (s): plain llama-cpp-python, a program of its own that imports no tipbench.
BASELINE = Path(_baseline_llamacpp.__file__).resolve()


def check_baseline_copy() -> None:
    """The baseline keeps a copy of `plain_cpu_buffers` (so that it imports no tipbench):
    refuse to time it when the copy no longer loads models as tipbench does."""
    if _code(_baseline_llamacpp.plain_cpu_buffers) != _code(plain_cpu_buffers):
        raise SystemExit(
            f"{BASELINE.name}: plain_cpu_buffers differs from tipbench.backends._llamacpp's: "
            "copy it again, so that the baseline loads models as tipbench does"
        )


def _code(function: Callable[..., Any]) -> str:
    """A function's code without its docstring, as a comparable AST dump."""
    node = ast.parse(inspect.getsource(function)).body[0]
    assert isinstance(node, ast.FunctionDef)
    if ast.get_docstring(node) is not None:
        node.body = node.body[1:]
    return ast.dump(node)


# --------------------------------------------------------------------------- the grid


@dataclass
class Grid:
    config: CollectConfig
    n_models: int
    cells: list[str]  # run names, in collect's order
    requests_file: Path  # (a): written each round, once (b)'s cells show their paths
    free_file: Path  # (u)
    schema_file: Path  # (s)
    shortlist_file: Path  # (t)
    blocks: list[dict[str, Any]] = field(default_factory=list)  # per model: both requests

    def collect_args(
        self, experiment: str, tracking_uri: str, structured: str = "auto", *, genai: bool = True
    ) -> list[str]:
        """The collect command's arguments; `genai=False` turns the GenAI records off."""
        c = self.config
        return [
            "collect",
            "--models",
            ",".join(c.models),
            "--prompts",
            ",".join(c.prompts),
            "--n-scenarios",
            str(c.n_scenarios),
            "--n-tips",
            str(c.n_tips),
            "--temperature",
            str(c.temperature),
            "--seed",
            str(c.seed),
            "--experiment",
            experiment,
            "--tracking-uri",
            tracking_uri,
            "--structured",
            structured,
            "--no-cache",
            *([] if genai else ["--no-genai-records"]),
        ]


def plan(args: argparse.Namespace, folder: Path) -> Grid:
    """The requests collect will make, built with the library, written for the baseline."""
    config = CollectConfig(prompts=args.prompts, n_tips=args.n_tips, n_scenarios=args.n_scenarios)
    suite = load_suite(config.suite)
    options = BackendOptions()
    backends = [open_backend(spec, options) for spec in config.model_specs()]
    for backend in backends:
        if not isinstance(backend, LlamaCppBackend):
            raise SystemExit(f"{backend.spec}: this benchmark runs embedded models only")
    cells = plan_grid(
        [(b.spec, b.describe().identity) for b in backends],
        [suite.prompt(v) for v in config.prompts],
        suite.select_scenarios(config.n_scenarios),
        n_tips=config.n_tips,
        temperature=config.temperature,
        seed=config.seed,
        max_tokens=config.generation_tokens,
        suite=suite.label,
    )
    blocks = []
    for backend in backends:
        pairs = [request_pair(c) for c in cells if c.model == backend.spec]
        assert isinstance(backend, LlamaCppBackend)
        blocks.append({"model": str(backend.spec), "model_path": str(backend.path), "pairs": pairs})
    grid = Grid(
        config,
        len(backends),
        [c.name for c in cells],
        folder / "requests.json",
        folder / "requests-free.json",
        folder / "requests-schema.json",
        folder / "requests-schema-shortlist.json",
        blocks,
    )
    write_requests(grid, grid.free_file, lambda pair: [pair["free"]])
    write_requests(grid, grid.schema_file, lambda pair: [pair["schema"]])
    write_requests(grid, grid.shortlist_file, lambda pair: [pair["schema"]], shortlist=True)
    return grid


def write_requests(grid: Grid, path: Path, pick: Any, *, shortlist: bool = False) -> None:
    """Write the requests `pick` takes from each cell's pair; with `shortlist`, the baseline
    checks grammars on a shortlist first, as the embedded backend does."""
    blocks = [
        {
            "model": block["model"],
            "model_path": block["model_path"],
            "requests": [r for pair in block["pairs"] for r in pick(pair)],
        }
        for block in grid.blocks
    ]
    spec = {"n_ctx": BackendOptions().n_ctx, "shortlist_grammar": shortlist, "blocks": blocks}
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")


def write_replay(grid: Grid, replay: Replay) -> None:
    """(a)'s requests: (b)'s requests per cell, as its path says (free answers cut where
    collect stops them)."""
    write_requests(grid, grid.requests_file, replay.requests, shortlist=True)


# --------------------------------------------------------------------------- timing


def request_seconds(timed: Timed) -> float:
    """A baseline run's time inside its requests, from the marks between them."""
    marks = [(t, line) for t, line in timed.stderr if line.startswith(("loaded ", "["))]
    return sum(
        later - earlier
        for (earlier, _), (later, line) in itertools.pairwise(marks)
        if line.startswith("[")
    )


def phases(timed: Timed) -> tuple[float, float, float] | None:
    """(start → 'loading', 'loading' → last 'unloading', then → exit), in seconds: from the
    baseline's marks, or collect's progress notes of the same words."""
    load, unload = timed.first("loading "), timed.last("unloading ")
    if load is None or unload is None:
        return None
    return load, unload - load, timed.seconds - unload


def base_env(threads: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.pop("TIPBENCH_LLAMA_THREADS", None)
    if threads:
        env["TIPBENCH_LLAMA_THREADS"] = threads
    env["PYTHONUNBUFFERED"] = "1"  # marks arrive when they are written, on both sides
    return env


def model_loads(output: str) -> int | None:
    """Total model loads from collect's "model loads: spec ×N, ..." line (0 for "none")."""
    match = re.search(r"^model loads: (.*)$", output, re.MULTILINE)
    if match is None:
        return None
    return sum(int(n) for n in re.findall(r"×(\d+)", match.group(1)))


# --------------------------------------------------------------------------- MLflow checks


def trace_count(client: Any, experiment: str) -> int:
    """How many traces the experiment holds (collect writes one per cell with GenAI records)."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return 0
    count, token = 0, None
    while True:
        page = client.search_traces(
            locations=[exp.experiment_id], include_spans=False, max_results=500, page_token=token
        )
        count += len(page)
        token = page.token
        if not token:
            return count


def cell_runs(client: Any, experiment: str) -> list[Any]:
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    return list(client.search_runs([exp.experiment_id], CELL_RUNS, max_results=5000))


def same_responses(client: Any, runs: list[Any], baseline: dict[str, str], folder: Path) -> int:
    """How many cells recorded the response text that (a) got for the same request."""
    same = 0
    for run in runs:
        name = run.info.run_name
        target = folder / run.info.run_id
        target.mkdir(parents=True)
        path = client.download_artifacts(run.info.run_id, "response.txt", str(target))
        same += Path(path).read_text(encoding="utf-8") == baseline.get(name)
    return same


def warm_up(server_url: str, model_paths: list[str], env: dict[str, str]) -> None:
    """Untimed: page in the model and the libraries, and let the server set itself up."""
    for path in model_paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
    subprocess.run(
        [sys.executable, "-c", "import mlflow, llama_cpp, tipbench.cli"], env=env, check=True
    )
    from mlflow import MlflowClient

    client = MlflowClient(server_url)
    exp = client.create_experiment(f"bench-warm-up-{uuid.uuid4().hex[:8]}")
    run = client.create_run(exp)
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        (Path(tmp) / "x.txt").write_text("x")
        client.log_artifacts(run.info.run_id, tmp)
        client.set_terminated(run.info.run_id)  # (prints the run's URL)


# --------------------------------------------------------------------------- the rounds


def bare_arm(timed: Timed, output: dict[str, Any], grid: Grid) -> ArmResult:
    """An arm of plain llama-cpp-python, from its marks and its answers (one per request)."""
    return ArmResult(
        timed.seconds,
        request_seconds(timed),
        sum(output["tokens"].values()),
        full_cells(output["texts"], grid.cells, grid.config.n_tips),
        len(grid.cells),
        len(output["texts"]),
    )


@dataclass
class Round:
    order: str
    a: Timed
    b: Timed
    b0: Timed  # (b) without the GenAI records
    warm: Timed
    loads: int | None
    warm_loads: int | None
    runs: int
    finished: int
    runs_after_warm: int
    same: int
    traces: int  # (b)'s traces: one per cell
    traces_b0: int  # (b0)'s: none
    attempts: float
    b_latency: float  # the sum of the cells' latency_s metrics: time inside generate()
    arms: dict[str, ArmResult] = field(default_factory=dict)  # u, s, a, b
    paths: dict[str, int] = field(default_factory=dict)  # (b)'s generation_path counts

    @property
    def ratio(self) -> float:
        return self.b.seconds / self.a.seconds

    @property
    def ratio_b0(self) -> float:
        return self.b0.seconds / self.a.seconds

    @property
    def genai_ratio(self) -> float:
        """What the GenAI records add: (b) over (b0), i.e. b/a with them over b0/a."""
        return self.b.seconds / self.b0.seconds

    @property
    def cpu_ratio(self) -> float:
        """The same comparison in CPU-seconds: (b) and the server serving it, over (a)."""
        return (self.b.cpu + self.b.server_cpu) / self.a.cpu

    @property
    def outside(self) -> tuple[float, float]:
        """Seconds each side spent outside the requests themselves (start-up, load, the
        harness between cells, tail): what tipbench adds, whatever the generation speed."""
        return self.a.seconds - request_seconds(self.a), self.b.seconds - self.b_latency

    @property
    def equalised_ratio(self) -> float:
        """b/a if both sides' requests had taken (a)'s time: noise in generation cancels."""
        out_a, out_b = self.outside
        return (self.a.seconds - out_a + out_b) / self.a.seconds

    @property
    def warm_ratio(self) -> float:
        return self.warm.seconds / self.a.seconds

    @property
    def quiet(self) -> bool:
        """Nothing else competed for the CPU: no other process, and no server work in (a)."""
        return self.a.quiet(server_too=True) and self.b.quiet()


def collect_arm(timed: Timed, runs: list[Any], grid: Grid, requests: int) -> ArmResult:
    """An arm of `tipbench collect`, from its time, its cell runs and its request count."""
    return ArmResult(
        timed.seconds,
        sum(r.data.metrics.get("latency_s", 0.0) for r in runs),
        int(sum(r.data.metrics.get("completion_tokens", 0) for r in runs)),
        sum(r.data.metrics.get("candidate_count", 0) >= grid.config.n_tips for r in runs),
        len(grid.cells),
        requests,
        int(sum(r.data.metrics.get("candidate_count", 0) for r in runs)),
    )


def one_round(
    number: int,
    grid: Grid,
    server: MlflowServer,
    folder: Path,
    env: dict[str, str],
    meter: CpuMeter,
    quiet_wait_s: float,
    replay: Replay | None,
    with_s: bool,
) -> tuple[Round, Replay | None]:
    from mlflow import MlflowClient

    work = folder / f"round-{number}"
    work.mkdir()
    experiment = f"bench-overhead-{uuid.uuid4().hex[:8]}"
    env_b = env | {"TIPBENCH_HOME": str(work / "tipbench-home")}
    texts_file = work / "baseline-responses.json"
    command_a = [sys.executable, str(BASELINE), str(grid.requests_file), str(texts_file)]
    command_b = tipbench_command() + grid.collect_args(experiment, server.url)

    def timed_run(label: str, command: list[str], run_env: dict[str, str]) -> Timed:
        meter.wait_quiet(quiet_wait_s)
        print(f"  round {number}: {label} ...", flush=True)
        result = run_timed(command, run_env, meter)
        print(
            f"  round {number}: {label} {result.seconds:.2f} s "
            f"(others used {result.other_cpu:.1f} CPU-s meanwhile)",
            flush=True,
        )
        return result

    arms: dict[str, ArmResult] = {}
    bare_arms = [
        ("u", "(u) plain llama-cpp-python, unconstrained", grid.free_file),
        ("t", "(t) the same, the grammar checked on a shortlist first", grid.shortlist_file),
    ]
    if with_s:
        bare_arms.append(
            ("s", "(s) plain llama-cpp-python, every request schema-constrained", grid.schema_file)
        )
    for arm, label, requests in bare_arms:
        out = work / f"arm-{arm}.json"
        command = [sys.executable, str(BASELINE), str(requests), str(out)]
        result = timed_run(label, command, env)
        if result.returncode != 0:
            raise SystemExit(f"({arm}) failed with exit code {result.returncode}")
        output = json.loads(out.read_text(encoding="utf-8"))
        arms[arm] = bare_arm(result, output, grid)
        if arm == "u" and replay is None:
            replay = Replay.of(output["pieces"], grid.config.n_tips)

    # (b1) first: a first collect in the round's new home, which asks the probe that chooses
    # the model's path and remembers its answers; every later collect of the round (a user's
    # second and later ones) chooses from memory
    first = f"{experiment}-first"
    command_b1 = tipbench_command() + grid.collect_args(first, server.url)
    timed_b1 = timed_run("(b1) tipbench collect, first in its home", command_b1, env_b)
    # (b) and (b0) next to each other, each first in every other round; then (a), which
    # replays the requests (b) made, as its cells' paths tell
    plain = f"{experiment}-no-genai"
    command_b0 = tipbench_command() + grid.collect_args(plain, server.url, genai=False)
    timed: dict[str, Timed] = {}
    runs_first = [("b", command_b), ("b0", command_b0)]
    if number % 2 == 0:
        runs_first.reverse()
    for arm, command in runs_first:
        label = "(b) tipbench collect" if arm == "b" else "(b0) the same, --no-genai-records"
        timed[arm] = timed_run(label, command, env_b)
        if timed[arm].returncode != 0:
            print(f"  ({arm}) exited {timed[arm].returncode}:\n{timed[arm].text()[-3000:]}")
    b, b0 = timed["b"], timed["b0"]
    order = ",".join(arm for arm, _ in runs_first) + ",a"
    client = MlflowClient(server.url)
    runs_b0 = cell_runs(client, plain)
    runs = cell_runs(client, experiment)
    assert replay is not None
    write_replay(grid, replay.following(paths_of(runs)))
    a = timed_run("(a) plain llama-cpp-python, (b)'s requests", command_a, env)
    if a.returncode != 0:
        raise SystemExit(f"(a) failed with exit code {a.returncode}:\n{a.text()[-3000:]}")
    for arm, mode in (("bs", "schema"), ("bo", "off")):
        other = f"{experiment}-{mode}"
        command = tipbench_command() + grid.collect_args(other, server.url, mode)
        result = timed_run(f"(b:{mode}) tipbench collect --structured {mode}", command, env_b)
        mode_runs = cell_runs(client, other)
        arms[arm] = collect_arm(result, mode_runs, grid, collect_requests(client, other))

    finished = sum(r.info.status == "FINISHED" for r in runs)
    attempts = sum(r.data.metrics.get("attempts", 1) for r in runs)
    b_latency = sum(r.data.metrics.get("latency_s", 0.0) for r in runs)
    output_a = json.loads(texts_file.read_text(encoding="utf-8"))
    baseline = output_a["texts"]
    same = same_responses(client, runs, baseline, work / "artifacts")
    arms["a"] = bare_arm(a, output_a, grid)
    arms["b"] = collect_arm(b, runs, grid, collect_requests(client, experiment))
    arms["b0"] = collect_arm(b0, runs_b0, grid, collect_requests(client, plain))
    arms["b1"] = collect_arm(
        timed_b1, cell_runs(client, first), grid, collect_requests(client, first)
    )
    paths: dict[str, int] = {}
    for path in paths_of(runs).values():
        paths[path] = paths.get(path, 0) + 1

    warm = timed_run("warm re-run of (b)", command_b, env_b)
    if warm.returncode != 0:
        print(f"  warm re-run exited {warm.returncode}:\n{warm.text()[-3000:]}", flush=True)
    done = Round(
        order=order,
        a=a,
        b=b,
        b0=b0,
        warm=warm,
        loads=model_loads(b.text()),
        warm_loads=model_loads(warm.text()),
        runs=len(runs),
        finished=finished,
        runs_after_warm=len(cell_runs(client, experiment)),
        same=same,
        traces=trace_count(client, experiment),
        traces_b0=trace_count(client, plain),
        attempts=attempts / max(len(runs), 1),
        b_latency=b_latency,
        arms=arms,
        paths=paths,
    )
    return done, replay


# --------------------------------------------------------------------------- report


def report(grid: Grid, rounds: list[Round], threads: str | None) -> bool:
    c, n = grid.config, len(grid.cells)
    # Other work on the machine only ever adds time: each side's best round is its least
    # disturbed one, so the verdict compares best with best.
    a_seconds = [r.a.seconds for r in rounds]
    ratio = best_ratio(a_seconds, [r.b.seconds for r in rounds])
    warm_ratio = best_ratio(a_seconds, [r.warm.seconds for r in rounds])
    median = median_ratio(a_seconds, [r.b.seconds for r in rounds])
    loads_ok = all(r.loads == grid.n_models for r in rounds)
    line = "-" * 96
    print()
    print(
        f"collect overhead: {grid.n_models} model ({', '.join(c.models)}) × "
        f"{len(c.prompts)} prompts ({', '.join(c.prompts)}) × "
        f"{n // (grid.n_models * len(c.prompts))} scenarios = {n} cells"
    )
    print(
        f"n_tips {c.n_tips}, max_tokens {c.generation_tokens}, temperature {c.temperature}, "
        f"seed {c.seed}, TIPBENCH_LLAMA_THREADS={threads or 'unset'}, "
        f"{os.cpu_count()} CPUs"
    )
    print(line)
    print(
        f"{'round':>5} {'order':>7} {'(a) plain s':>12} {'(b) collect s':>14} {'b/a':>7}"
        f" {'warm s':>8} {'warm/a':>7} {'loads':>6} {'runs ok':>8} {'same text':>10}"
        f" {'quiet':>6}"
    )
    for i, r in enumerate(rounds, start=1):
        print(
            f"{i:>5} {r.order:>7} {r.a.seconds:>12.2f} {r.b.seconds:>14.2f} {r.ratio:>7.3f}"
            f" {r.warm.seconds:>8.2f} {r.warm_ratio:>7.3f} {r.loads!s:>6}"
            f" {f'{r.finished}/{n}':>8} {f'{r.same}/{n}':>10}"
            f" {'yes' if r.quiet else 'NO':>6}"
        )
    print(line)
    print(
        "where the time goes (s): startup = process start → model load begins; generate = "
        "load + every cell;"
    )
    print(
        "tail = last cell → exit; CPU-s of the process, of the MLflow server, and of every "
        "other process meanwhile"
    )
    for i, r in enumerate(rounds, start=1):
        for side, t in (("(a)", r.a), ("(b)", r.b), ("warm", r.warm)):
            p = phases(t)
            where = (
                f"startup {p[0]:6.2f}  generate {p[1]:7.2f}  tail {p[2]:5.2f}"
                if p
                else f"{'(no model load)':>40}"
            )
            print(
                f"  round {i} {side:<4} {where}   cpu {t.cpu:7.2f}  server {t.server_cpu:5.2f}"
                f"  others {t.other_cpu:6.2f}"
            )
        a_req = request_seconds(r.a)
        out_a, out_b = r.outside
        print(
            f"  round {i} inside the {n} requests: (a) {a_req:.2f}, (b) {r.b_latency:.2f}"
            f" ({r.b_latency / a_req - 1:+.1%}); outside them: (a) {out_a:.2f}, "
            f"(b) {out_b:.2f}; mean attempts per cell {r.attempts:.2f}"
        )
        print(
            f"  round {i} warm re-run: model loads {r.warm_loads}, cell runs after it "
            f"{r.runs_after_warm} (was {r.runs})"
        )
    print(line)
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    quiet = sum(r.quiet for r in rounds)
    print(
        f"b/a wall clock, best rounds: {ratio:.3f}   target ≤ {TARGET:.2f}   {verdict}"
        f"   (median of per-round b/a {median:.3f}; {quiet}/{len(rounds)} rounds quiet)"
    )
    b0_seconds = [r.b0.seconds for r in rounds]
    genai = best_ratio(b0_seconds, [r.b.seconds for r in rounds])
    print(
        f"b0/a, no GenAI records:      {best_ratio(a_seconds, b0_seconds):.3f}   "
        f"(median of per-round b0/a {median_ratio(a_seconds, b0_seconds):.3f})"
    )
    print(
        f"b/b0, what they add:         {genai:.3f}   target ≤ {GENAI_TARGET:.2f}   "
        f"{'met' if genai <= GENAI_TARGET else 'NOT met'}   (per round "
        f"{spread(b0_seconds, [r.b.seconds for r in rounds])}; printed, not in the exit status)"
    )
    equalised = statistics.median(r.equalised_ratio for r in rounds)
    print(
        f"b/a, requests equalised:     {equalised:.3f}   ((a) + the time (b) spends outside its "
        "requests; median, for reference)"
    )
    cpu_ratio = statistics.median(r.cpu_ratio for r in rounds)
    print(
        f"b/a CPU-seconds:             {cpu_ratio:.3f}   ((b) + the server's work for it, over "
        "(a); median, for reference)"
    )
    loads = sorted({r.loads for r in rounds}, key=str)
    print(
        f"model loads per cold grid:   {', '.join(map(str, loads))}       models: "
        f"{grid.n_models}       {'PASS' if loads_ok else 'FAIL'}"
    )
    print(
        f"warm re-run / (a), best:     {warm_ratio:.3f}   (every cell resumed from MLflow, "
        "no model load)"
    )
    print("-" * 96)
    print_arms([r.arms for r in rounds], [r.paths for r in rounds])
    clean = all(r.runs == n and r.finished == n and r.runs_after_warm == n for r in rounds)
    print(
        f"MLflow: {n} cell runs per grid, all FINISHED, none duplicated by the warm re-run: "
        f"{'yes' if clean else 'NO'}"
    )
    traced = all(r.traces == n and r.traces_b0 == 0 for r in rounds)
    print(
        f"MLflow: {n} traces per grid of (b) after the warm re-run, none of (b0): "
        f"{'yes' if traced else 'NO'} ({', '.join(f'{r.traces}/{r.traces_b0}' for r in rounds)})"
    )
    return ratio <= TARGET and loads_ok and clean and traced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--n-scenarios", type=int, default=0, help="first N scenarios (0 = all)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS, help="comma-separated versions")
    parser.add_argument("--n-tips", type=int, default=5)
    parser.add_argument(
        "--readme-grid",
        action="store_true",
        help="the README's grid: 3 prompts x 3 scenarios, n_tips 5 (9 cells)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds")
    parser.add_argument(
        "--with-s",
        action="store_true",
        help="also time (s): every request constrained with llama-cpp-python's own grammar check",
    )
    parser.add_argument(
        "--threads",
        default=os.environ.get("TIPBENCH_LLAMA_THREADS"),
        help="TIPBENCH_LLAMA_THREADS for both sides [default: as set, else tipbench's choice]",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=600.0,
        help="seconds to wait for other processes to go idle before each "
        "timed run (0 = do not wait)",
    )
    args = parser.parse_args()
    if args.readme_grid:
        args.prompts, args.n_scenarios, args.n_tips = DEFAULT_PROMPTS, README_SCENARIOS, 5
    check_baseline_copy()
    env = base_env(args.threads)
    with tempfile.TemporaryDirectory(prefix="tipbench-bench-") as tmp:
        folder = Path(tmp)
        grid = plan(args, folder)
        print(f"grid: {len(grid.cells)} cells; starting mlflow server ...", flush=True)
        with MlflowServer(folder / "mlflow-server") as server:
            assert server.process is not None
            meter = CpuMeter(server.process.pid)  # the server runs in its own session
            blocks = json.loads(grid.free_file.read_text(encoding="utf-8"))["blocks"]
            warm_up(server.url, [b["model_path"] for b in blocks], env)
            meter.wait_server_idle()
            rounds: list[Round] = []
            replay: Replay | None = None
            for i in range(1, args.repeat + 1):
                done, replay = one_round(
                    i, grid, server, folder, env, meter, args.quiet_wait, replay, args.with_s
                )
                rounds.append(done)
        ok = report(grid, rounds, args.threads)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
