#!/usr/bin/env python
"""Does the gate decide on the data a user has, and how many human judgements until it does
(issues 23, 31 and 43). A simulation, not a timing: its figures do not depend on the
machine, so it can be run anywhere.

First, the power table of issue 43 (`tipbench_dev.ppi_sim.gap_world`: 4 cells, 3 runs a
scenario, the judge "decent", the gate read after every label, 300 experiments a row): the
share of experiments whose best cell is promoted with every run judged and by the time half
of them are, beside a one-look paired t test of the top two on every run, the figures
before issue 43 (its outside check, on the same design), and the false promotions with the
two top cells equal. `--labels` adds the table below.

Simulated experiments have the bundled suite's shape on the documented Ollama grid:
4 models × 3 prompts = 12 cells, 8 scenarios, one run each (96 runs; `--runs` for more).
Their true mean composites put a leader 3 points ahead of the second cell and the rest
further behind (`--means`, composites); each run's human score is three integer 1–5
criteria with a ceiling around a latent quality (scenario effect, the cell's reaction,
heteroscedastic run noise; `tipbench_dev.ppi_sim`). The automatic judge is biased for
one model's cells, contrary inside the leading cell, generous at the ceiling, or useless.

Each experiment is judged one run at a time through the product's judging loop
(`judging`: the page's next run, then the gate's standing after every label); the
count stops when the leader is decided (every other cell's confidence sequence below it,
every cell's human scores on 6+ scenarios), or when every run is judged. Three ways:

  (h) uniform order, the human scores alone (λ = 0: the human tier's information);
  (u) uniform order, combined with the judge's scores (PPI++);
  (a) active order (`judging.next_cells`), combined.

It prints, per judge, the share of experiments decided, the share that named a wrong
leader (the budget is α = 5% whatever the order), the median and mean human judgements to
a decision (undecided experiments count as never: the median; and are left out: the mean),
and the ratios a/u, a/h and u/h of the medians.

Before issue 31 (no variance floor, runs as independent, sequences on any number of human
scores) the same bench on its continuous-score world gave medians a 22.5, u 54, h 77.5 of
96 runs (docs/statistics.md); run `git show 6136559:bench/labels_to_decision.py` against
that commit's tree to see them again.

    python bench/labels_to_decision.py [--power-experiments 300] [--labels [--experiments 400]
        [--seed 23] [--judges biased,useless]]

Exit status: 0 if no way named a wrong leader in more than α of the experiments, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from tipbench_dev.ppi_sim import JUDGES, Race, World, gap_world, one_look_power, race, simulate

GRID = (13.0, 10.0, 9.0, 8.5, 8.0, 7.5, 7.0, 6.5, 6.0, 6.0, 5.5, 5.0)
WAYS = (("h", "uniform", False), ("u", "uniform", True), ("a", "active", True))
NAMES = {"h": "(h) uniform, human alone", "u": "(u) uniform, combined", "a": "(a) active, combined"}


def _median(result: Race) -> float:
    return float(np.median(np.where(result.decided(), result.labels, np.inf)))


def _mean(result: Race) -> float:
    decided = result.decided()
    return float(result.labels[decided].mean()) if decided.any() else float("nan")


def _ratio(medians: dict[str, float], top: str, bottom: str) -> str:
    """A ratio of two medians; n/a where either is undecided in most experiments (inf)."""
    a, b = medians[top], medians[bottom]
    return f"{a / b:.2f}" if np.isfinite(a) and np.isfinite(b) else "n/a"


def _world(means: str, runs: int) -> World:
    """Composites to latent qualities (three criteria + 2), on 4 models × 3 prompts, with
    the spreads of the bench before issue 31 in composite points (scenario 1.0, a cell's
    reaction 0.5, a run's tips 0.9; a third of each on a criterion's scale), now with
    integer criteria, a ceiling and heteroscedastic runs."""
    composites = [float(m) for m in means.split(",")]
    latent = tuple((m - 2.0) / 3.0 for m in composites)
    models = tuple(i // 3 for i in range(len(latent)))
    return World(
        means=latent,
        models=models,
        runs=runs,
        scenario_sd=1.0 / 3.0,
        interaction_sd=0.5 / 3.0,
        run_sd=0.9 / 3.0,
        criterion_sd=0.15,
    )


POWER_ROWS = ((3.0, 8, "0.51–0.57, within 8 labels a cell 0.00–0.01"),
              (1.5, 8, "0.02–0.03"), (1.5, 16, "–"))  # fmt: skip


def power_table(experiments: int, seed: int, alpha: float) -> bool:
    """Print issue 43's power table; False if the two equal top cells were split more than
    α of the time."""
    print(
        f"issue 43: 4 cells, 3 runs a scenario, judge 'decent', the gate read after every "
        f"label, {experiments} experiments a row"
    )
    print(f"{'gap':>4} {'scen.':>5} {'every run':>10} {'half':>6} {'one-look t':>11}  before")
    for gap, scenarios, before in POWER_ROWS:
        found = simulate(gap_world(gap, scenarios), experiments, seed)
        result = race(found, "decent", "active", seed=seed + 1, alpha=alpha)
        runs = found.world.n_cells * found.world.n_runs
        print(
            f"{gap:4.1f} {scenarios:5d} {result.found(0).mean():10.2f} "
            f"{result.found(0, within=runs // 2).mean():6.2f} "
            f"{one_look_power(found, alpha):11.2f}  {before}"
        )
    equal = simulate(gap_world(0.0), experiments, seed)
    split = race(equal, "decent", "active", seed=seed + 1, alpha=alpha).decided().mean()
    print(f"two equal top cells, 8 scenarios: promoted in {split:.3f} (α = {alpha})")
    return bool(split <= alpha)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--experiments", type=int, default=400)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--judges", default=",".join(JUDGES))
    parser.add_argument("--means", default=",".join(str(m) for m in GRID))
    parser.add_argument("--runs", type=int, default=1, help="runs per scenario")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power-experiments", type=int, default=300)
    parser.add_argument("--labels", action="store_true", help="also the labels-to-decision table")
    args = parser.parse_args(argv)
    ok = power_table(args.power_experiments, args.seed, args.alpha)
    if not args.labels:
        return 0 if ok else 1
    print()
    world = _world(args.means, args.runs)
    experiments = simulate(world, args.experiments, args.seed)
    best = frozenset({int(np.argmax(experiments.truth))})
    runs = world.n_cells * world.n_runs
    print(
        f"{args.experiments} experiments, {world.n_cells} cells × {world.n_scenarios} "
        f"scenarios × {world.runs} runs = {runs} runs; α = {args.alpha}; true means "
        + ", ".join(f"{t:.2f}" for t in experiments.truth)
    )
    print(f"{'judge':8} {'way':26} {'decided':>8} {'wrong':>6} {'median':>7} {'mean':>6}")
    for judge in args.judges.split(","):
        results = {}
        for key, order, use_judge in WAYS:
            result = race(
                experiments,
                judge,
                order,  # type: ignore[arg-type]
                use_judge=use_judge,
                alpha=args.alpha,
                seed=args.seed,
            )
            results[key] = result
            wrong = float(result.wrong(best).mean())
            ok = ok and wrong <= args.alpha
            print(
                f"{judge:8} {NAMES[key]:26} {result.decided().mean():8.2f} "
                f"{wrong:6.3f} {_median(result):7.1f} {_mean(result):6.1f}"
            )
        medians = {key: _median(result) for key, result in results.items()}
        print(
            f"{judge:8} ratios of the medians: a/u {_ratio(medians, 'a', 'u')}  "
            f"a/h {_ratio(medians, 'a', 'h')}  u/h {_ratio(medians, 'u', 'h')}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
