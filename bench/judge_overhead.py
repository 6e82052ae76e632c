#!/usr/bin/env python
"""What does `tipbench judge auto` cost on top of the judge requests it makes?

The README's grid (the embedded model, 3 prompts × 3 scenarios × 5 tips: 45 candidates) is
collected once, untimed, into a local store (the README's default); every round judges a
fresh copy of it, each arm a fresh process timed from start to exit:

  (b)  `tipbench judge auto` on the copy, as the README's loop runs it (the embedded judge,
       the score schema), in a home where an earlier pass left the evaluated rubric
       (`TIPBENCH_HOME/warmed`): a later pass;
  (b1) the same in a fresh home: a first pass, the rubric evaluated as (a) evaluates it;
  (a)  baseline: plain llama-cpp-python in a loop making the SAME requests (b) makes, in
       the same order: the same messages, schema, temperature, seed, max tokens and repeat
       penalty, the model loaded as the embedded backend loads it (n_ctx, plain CPU
       buffers, the threads it chooses), grammars checked on a shortlist and answers read
       in the score schema's form as it does (`backends/_forms.py`);
  (a:token) the same requests decoded token by token, as before the form (issue 46): what
       the form saves, and whether it changes an answer.

It prints per round the wall clock of each arm, b1/a and b/a, the candidates per second of
each arm (over the wall clock, and over the time from the model's load to the last
candidate), where (b1)'s and (b)'s time goes (start-up, judging, the tail after the last
candidate), whether their answers (`auto_answers.json`) are (a)'s, and (a)'s (a:token)'s,
candidate by candidate. Target: b1/a ≤ 1.10 (the same work), best round against best
round (other work on the machine only ever adds time), with the median of the per-round
ratios beside it. Printed too: (b1)'s and (b)'s candidates per second against the 0.70 a
first pass judged before issue 46 on the README's grid (target ≥ 1.5×; a fixed figure
from an idle 2-core machine, so read it from one).

    python bench/judge_overhead.py [--n-scenarios 3] [--prompts v1,v2-mentor,v3-few-shot]
                                   [--n-tips 5] [--repeat 3] [--threads T]
                                   [--quiet-wait SECONDS]

Exit status: 0 if b1/a ≤ 1.10 and every round judged every run with (a)'s answers; 1
otherwise (answers that differ from (a:token)'s are counted, not fatal). The baselines run
`_baseline_llamacpp.py`, which imports no tipbench.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import _baseline_llamacpp
from _arms import tipbench_command, wire
from _cpu import CpuMeter, Timed, run_timed
from _report import best_ratio, median_ratio, spread
from tipbench.auto_judge import DEFAULT_JUDGE_MODEL, judge_messages
from tipbench.auto_judge._judge import JUDGE_N_CTX
from tipbench.auto_judge._requests import (
    JUDGE_SEED,
    JUDGE_TEMPERATURE,
    judge_request,
    judging_order,
)
from tipbench.backends import BackendOptions, ModelSpec, open_backend
from tipbench.backends._llamacpp import LlamaCppBackend
from tipbench.collect import DEFAULT_PROMPTS
from tipbench.suite import load_suite
from tipbench.tracking import AUTO_ANSWERS_FILE, TrackingStore, fetch_candidates

TARGET = 1.10
#: (b)'s candidates per second over the wall clock before issue 46 (best round, idle 2-core
#: machine, f0c693e; bench/README.md), and what issue 46 asks of it: 1.5 times as many.
BEFORE_46 = 0.70
SPEED_TARGET = 1.5
EXPERIMENT = "tip-bench-judge-overhead"
BASELINE = Path(_baseline_llamacpp.__file__).resolve()
_SCRUB = ("MLFLOW_TRACKING_URI", "OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY")
PRODUCT = {
    "b": "(b) judge auto, rubric kept in the home",
    "b1": "(b1) judge auto, a fresh home",
}
ARMS = {
    "a": "(a) bare loop, (b)'s requests",
    "a_token": "(a:token) token by token",
}


# --------------------------------------------------------------------------- setup


@dataclass
class Setup:
    folder: Path
    store: Path  # the store each round judges (restored from `template` first)
    template: Path
    env: dict[str, str]
    candidates: int
    runs: int
    requests: dict[str, Path] = field(default_factory=dict)  # arm -> requests file

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.store / 'mlflow.db'}"

    def restore(self) -> None:
        shutil.rmtree(self.store, ignore_errors=True)
        shutil.copytree(self.template, self.store)


def base_env(folder: Path, threads: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.pop("TIPBENCH_LLAMA_THREADS", None)
    if threads:
        env["TIPBENCH_LLAMA_THREADS"] = threads
    env["TIPBENCH_HOME"] = str(folder / "tipbench-home")
    env["PYTHONUNBUFFERED"] = "1"  # marks and progress lines arrive when written
    return env


def prepare(args: argparse.Namespace, folder: Path) -> Setup:
    """Collect the grid (untimed) and write each baseline arm's requests, built with the
    library: the judge's order, messages and request settings."""
    store, template = folder / "store", folder / "template"
    setup = Setup(folder, store, template, base_env(folder, args.threads), 0, 0)
    collect = [
        *tipbench_command(), "collect", "--prompts", args.prompts,
        "--n-scenarios", str(args.n_scenarios), "--n-tips", str(args.n_tips),
        "--experiment", EXPERIMENT, "--tracking-uri", setup.uri,
    ]  # fmt: skip
    print(f"collecting the grid (untimed): {' '.join(collect[-12:])}", flush=True)
    subprocess.run(collect, env=setup.env, check=True, capture_output=True, text=True)
    shutil.copytree(store, template)
    print("judging it once (untimed), leaving the evaluated rubric in the home", flush=True)
    subprocess.run(judge_command(setup), env=setup.env, check=True, capture_output=True)
    setup.restore()

    tracking = TrackingStore(setup.uri)
    runs = tracking.cell_runs(tracking.experiment_id(EXPERIMENT), judgeable=True)
    rubric = load_suite().rubric.text()
    backend = open_backend(ModelSpec.parse(DEFAULT_JUDGE_MODEL), BackendOptions())
    assert isinstance(backend, LlamaCppBackend)
    cells = dict(zip([r.run_id for r in runs], fetch_candidates(tracking, runs), strict=True))
    setup.runs, setup.candidates = len(runs), sum(len(c.candidates) for c in cells.values())
    for arm, in_form in (("a", True), ("a_token", False)):
        requests = []
        for run in judging_order(runs):
            cell = cells[run.run_id]
            for candidate in cell.candidates:
                messages = judge_messages(rubric, cell.scenario, candidate.model_dump())
                request = judge_request(messages, "schema", JUDGE_TEMPERATURE, JUDGE_SEED)
                if not in_form:
                    request = replace(request, form=None)
                requests.append(wire(f"{run.label} {candidate.id}", request))
        blocks = [{"model": DEFAULT_JUDGE_MODEL, "model_path": str(backend.path),
                   "requests": requests}]  # fmt: skip
        spec = {"n_ctx": JUDGE_N_CTX, "shortlist_grammar": True, "blocks": blocks}
        setup.requests[arm] = folder / f"requests-{arm}.json"
        setup.requests[arm].write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return setup


# --------------------------------------------------------------------------- a round


@dataclass
class Arm:
    timed: Timed
    answers: dict[str, str]  # candidate ("run cid") -> answer text

    def first(self, prefix: str) -> float | None:
        return self.timed.first(prefix)

    def judging(self) -> float:
        """Seconds from the model's load to the last candidate (progress or baseline marks)."""
        start = self.timed.first("loading ")
        end = self.timed.last("[")
        return (end - start) if start is not None and end is not None else float("nan")


@dataclass
class Round:
    arms: dict[str, Arm]
    order: str
    same: int  # candidates whose (b) and (b1) answers are (a)'s
    same_token: int  # candidates whose (a) answer is (a:token)'s
    judged: int  # runs (b) and (b1) judged

    def ratio(self, arm: str = "b", base: str = "a") -> float:
        return self.arms[arm].timed.seconds / self.arms[base].timed.seconds


def judge_answers(setup: Setup) -> tuple[dict[str, str], int]:
    """(b)'s last answer per candidate, from each run's `auto_answers.json`, and how many
    runs have automatic scores."""
    store = TrackingStore(setup.uri)
    runs = store.cell_runs(store.experiment_id(EXPERIMENT), judgeable=True)
    answers: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            target = Path(tmp) / run.run_id
            target.mkdir()
            path = store.client.download_artifacts(run.run_id, AUTO_ANSWERS_FILE, str(target))
            document = json.loads(Path(path).read_text(encoding="utf-8"))
            for cid, tries in document["candidates"].items():
                answers[f"{run.label} {cid}"] = tries[-1]["text"] if tries else ""
    return answers, sum(run.judged_by("auto") for run in runs)


def judge_command(setup: Setup) -> list[str]:
    return [
        *tipbench_command(), "judge", "auto", "--experiment", EXPERIMENT,
        "--tracking-uri", setup.uri,
    ]  # fmt: skip


def one_round(number: int, setup: Setup, meter: CpuMeter, quiet_wait: float) -> Round:
    def timed(label: str, command: list[str], env: dict[str, str] | None = None) -> Timed:
        meter.wait_quiet(quiet_wait)
        print(f"  round {number}: {label} ...", flush=True)
        result = run_timed(command, env or setup.env, meter)
        print(
            f"  round {number}: {label} {result.seconds:.2f} s "
            f"(others used {result.other_cpu:.1f} CPU-s meanwhile)",
            flush=True,
        )
        if result.returncode != 0:
            raise SystemExit(f"{label} exited {result.returncode}:\n{result.text()[-3000:]}")
        return result

    def bare(arm: str) -> Arm:
        out = setup.folder / f"round-{number}-{arm}.json"
        result = timed(ARMS[arm], [sys.executable, str(BASELINE), str(setup.requests[arm]),
                                   str(out)])  # fmt: skip
        return Arm(result, json.loads(out.read_text(encoding="utf-8"))["texts"])

    def product(arm: str) -> tuple[Arm, int]:
        """(b) or (b1), with its answers and the runs it judged."""
        setup.restore()
        env = setup.env
        if arm == "b1":
            env = {**env, "TIPBENCH_HOME": str(setup.folder / f"home-round-{number}")}
        judged = Arm(timed(PRODUCT[arm], judge_command(setup), env), {})
        judged.answers, runs = judge_answers(setup)
        return judged, runs

    arms: dict[str, Arm] = {}
    runs: list[int] = []
    first, second = ("b", "a") if number % 2 else ("a", "b")
    for arm in (first, second, "b1"):
        if arm == "a":
            arms[arm] = bare(arm)
        else:
            arms[arm], judged = product(arm)
            runs.append(judged)
    arms["a_token"] = bare("a_token")
    reference = arms["a"].answers
    same = min(
        sum(reference.get(name) == text for name, text in arms[arm].answers.items())
        for arm in PRODUCT
    )
    token = arms["a_token"].answers
    same_token = sum(token.get(name) == text for name, text in reference.items())
    return Round(arms, f"{first},{second}", same, same_token, min(runs))


# --------------------------------------------------------------------------- report


def report(setup: Setup, rounds: list[Round], args: argparse.Namespace) -> bool:
    n = setup.candidates
    line = "-" * 96
    print()
    print(
        f"judge overhead: {setup.runs} runs, {n} candidates ({args.prompts} × "
        f"{args.n_scenarios} scenarios × {args.n_tips} tips), judge {DEFAULT_JUDGE_MODEL}, "
        f"TIPBENCH_LLAMA_THREADS={args.threads or 'unset'}, {os.cpu_count()} CPUs"
    )
    print(line)
    print(f"{'round':>5} {'order':>5} {'(a) s':>8} {'(b1) s':>8} {'b1/a':>7} {'(b) s':>8} "
          f"{'b/a':>7} {'(a:token) s':>12} {'b = a':>7} {'a = a:token':>12} {'runs':>6}"
          )  # fmt: skip
    for i, r in enumerate(rounds, start=1):
        a, b, b1 = (r.arms[k].timed.seconds for k in ("a", "b", "b1"))
        print(
            f"{i:>5} {r.order:>5} {a:>8.2f} {b1:>8.2f} {b1 / a:>7.3f} {b:>8.2f} {b / a:>7.3f} "
            f"{r.arms['a_token'].timed.seconds:>12.2f} {f'{r.same}/{n}':>7} "
            f"{f'{r.same_token}/{n}':>12} {f'{r.judged}/{setup.runs}':>6}"
        )
    print(line)
    print(
        "candidates per second, best round (over the wall clock; over the model's load to "
        "the last candidate):"
    )
    for key, label in (PRODUCT | ARMS).items():
        best = min((r.arms[key] for r in rounds), key=lambda arm: arm.timed.seconds)
        print(f"  {label:<40} {n / best.timed.seconds:6.3f}   {n / best.judging():6.3f}")
    print(
        "where (b1)'s and (b)'s time goes (s): start-up = process start → model load; "
        "judging = load → last candidate; tail = → exit"
    )
    for i, r in enumerate(rounds, start=1):
        for key in PRODUCT:
            b = r.arms[key].timed
            load, last = b.first("loading "), b.last("[")
            if load is None or last is None:
                continue
            print(
                f"  round {i}: ({key}) start-up {load:6.2f}  judging {last - load:7.2f}  tail "
                f"{b.seconds - last:5.2f}  cpu {b.cpu:6.2f}  others {b.other_cpu:6.2f}"
            )
        a = r.arms["a"]
        print(
            f"  round {i}: (a) start-up {a.first('loading ') or 0:5.2f}  judging {a.judging():7.2f}"
        )
    print(line)
    a_best = [r.arms["a"].timed.seconds for r in rounds]
    ok = True
    for key, what in (("b1", "the same work: target ≤"), ("b", "a later pass, printed; ≤")):
        seconds = [r.arms[key].timed.seconds for r in rounds]
        ratio, median = best_ratio(a_best, seconds), median_ratio(a_best, seconds)
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(
            f"{key}/a wall clock, best rounds: {ratio:.3f}   ({what} {TARGET:.2f})   "
            f"{verdict}   (median of per-round ratios {median:.3f})"
        )
        ok = ok and (ratio <= TARGET or key == "b")
    token = [r.arms["a_token"].timed.seconds for r in rounds]
    print(
        f"{ARMS['a_token']} / (a): {spread(a_best, token)}   (median [min, max]: what the "
        "form saves)"
    )
    cpu = statistics.median(r.arms["b1"].timed.cpu / r.arms["a"].timed.cpu for r in rounds)
    print(f"b1/a CPU-seconds: {cpu:.3f}   (median, for reference)")
    same = all(r.same == n and r.judged == setup.runs for r in rounds)
    print(
        f"(b1) and (b) judged every run with (a)'s answers in every round: "
        f"{'yes' if same else 'NO'}"
    )
    changed = sum(n - r.same_token for r in rounds)
    print(f"answers the form changed ((a) against (a:token)): {changed} of {n * len(rounds)}")
    for key in PRODUCT:
        gain = n / min(r.arms[key].timed.seconds for r in rounds) / BEFORE_46
        print(
            f"({key}) candidates per second / {BEFORE_46} before issue 46: {gain:.2f}   "
            f"target ≥ {SPEED_TARGET}   {'met' if gain >= SPEED_TARGET else 'NOT met'}"
        )
    print(
        "(the figure before issue 46 was a first pass: the README's 45 candidates on an idle "
        "2-core machine)"
    )
    return ok and same


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[1])
    parser.add_argument("--n-scenarios", type=int, default=3, help="first N scenarios")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS, help="comma-separated versions")
    parser.add_argument("--n-tips", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="rounds")
    parser.add_argument(
        "--threads",
        default=os.environ.get("TIPBENCH_LLAMA_THREADS"),
        help="TIPBENCH_LLAMA_THREADS for every arm [default: as set, else tipbench's choice]",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=600.0,
        help="seconds to wait for other processes to go idle before each timed run",
    )
    args = parser.parse_args()
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # reading (b)'s answers
    with tempfile.TemporaryDirectory(prefix="tipbench-judge-bench-") as tmp:
        setup = prepare(args, Path(tmp))
        meter = CpuMeter(-1)  # no server: a local store
        rounds = [one_round(i, setup, meter, args.quiet_wait) for i in range(1, args.repeat + 1)]
        ok = report(setup, rounds, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
