#!/usr/bin/env python
"""Build (once) and reuse a large SQLite MLflow store of synthetic cell runs.

Two kinds of experiment, each in a store of its own:

  judged   every run judged by both tiers (human and auto scores under the scores contract),
           no artifacts: what `compare` reads;
  pending  every run with `candidates.json` and auto scores, waiting for the human judge:
           what `judge export` / `judge apply` work on.

Runs are laid out models × prompts × scenarios. Each (model, prompt) has a quality level and
each scenario a difficulty, so the leaderboard has a real order and the paired comparison
real signal; five candidates per run are drawn around that, and the auto tier is the human
one plus noise. Writing takes ~30 ms per run (three MLflow calls on SQLite), so a store is
built in a temporary folder, then moved under the cache folder
(`$XDG_CACHE_HOME/tipbench-bench`) and reused by every later call with the same layout.
`open_copy` hands out a private copy whose artifact paths point into the copy.

    python bench/judged_store.py [--kind judged|pending] [--models 5] [--prompts 4]
                                 [--scenarios 500] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tipbench.tracking import Scores, TrackingStore
from tipbench_dev.judged_runs import JudgedCell, write_cells

Kind = Literal["judged", "pending"]
GENERATOR_VERSION = 1  # bump when the generated data changes
EXPERIMENT = "tip-bench-scale"
N_CANDIDATES = 5


@dataclass(frozen=True)
class Layout:
    kind: Kind
    models: int = 5
    prompts: int = 4
    scenarios: int = 500

    @property
    def n_runs(self) -> int:
        return self.models * self.prompts * self.scenarios

    @property
    def name(self) -> str:
        return f"{self.kind}-v{GENERATOR_VERSION}-{self.models}x{self.prompts}x{self.scenarios}"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tipbench-bench"


def _clip(value: float, low: int, high: int) -> int:
    return max(low, min(high, round(value)))


def _candidates(rng: random.Random, level: float) -> dict[str, Scores]:
    out = {}
    for i in range(1, N_CANDIDATES + 1):
        out[f"c{i}"] = Scores(
            relevance=_clip(rng.gauss(level, 0.9), 1, 5),
            actionability=_clip(rng.gauss(level - 0.3, 0.9), 1, 5),
            tone=_clip(rng.gauss(level + 0.2, 0.8), 1, 5),
            format_ok=int(rng.random() < 0.85),
            overlong=int(rng.random() < 0.1),
        )
    return out


def _noisy(rng: random.Random, scores: dict[str, Scores]) -> dict[str, Scores]:
    """The auto tier: the human scores, each criterion off by one now and then."""

    def jitter(value: int) -> int:
        return _clip(value + rng.choice((-1, 0, 0, 0, 1)), 1, 5)

    return {
        cid: Scores(jitter(s.relevance), jitter(s.actionability), jitter(s.tone),
                    s.format_ok, s.overlong)
        for cid, s in scores.items()
    }  # fmt: skip


def cells(layout: Layout, seed: int = 0) -> Iterator[JudgedCell]:
    """The synthetic cells of a layout, deterministic for a seed."""
    rng = random.Random(seed)
    difficulty = [rng.gauss(0.0, 0.5) for _ in range(layout.scenarios)]
    for m in range(layout.models):
        for p in range(layout.prompts):
            quality = 2.6 + 0.25 * m + 0.15 * p + rng.gauss(0.0, 0.1)
            for s in range(layout.scenarios):
                human = _candidates(rng, quality - difficulty[s])
                yield JudgedCell(
                    model=f"ollama:model-{m}",
                    prompt_version=f"p{p}",
                    scenario_id=f"scenario-{s:04d}",
                    human=human if layout.kind == "judged" else None,
                    auto=_noisy(rng, human),
                    n_candidates=N_CANDIDATES,
                )


def _uri(folder: Path) -> str:
    return f"sqlite:///{folder / 'mlflow.db'}"


def build(layout: Layout, folder: Path, progress: bool = True) -> None:
    """Write the layout's runs into a new store in `folder`."""
    store = TrackingStore(_uri(folder))
    experiment_id = store.experiment_id(EXPERIMENT, create=True)
    with_candidates = layout.kind == "pending"
    started = time.perf_counter()
    batch: list[JudgedCell] = []
    done = 0
    for cell in cells(layout):
        batch.append(cell)
        if len(batch) == 500:
            write_cells(store.client, experiment_id, batch, with_candidates)
            done += len(batch)
            batch.clear()
            if progress:
                rate = done / (time.perf_counter() - started)
                print(f"  {layout.name}: {done}/{layout.n_runs} runs ({rate:.0f}/s)",
                      file=sys.stderr, flush=True)  # fmt: skip
    write_cells(store.client, experiment_id, batch, with_candidates)


def ensure(layout: Layout, cache: Path | None = None) -> Path:
    """The cached store folder of `layout`, built first if it does not exist yet."""
    cache = cache or default_cache()
    folder = cache / layout.name
    if (folder / "mlflow.db").exists():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    print(f"building {folder} ({layout.n_runs} runs, once; later runs reuse it)",
          file=sys.stderr, flush=True)  # fmt: skip
    building = Path(tempfile.mkdtemp(prefix=f".{layout.name}-", dir=cache))
    try:
        build(layout, building)
        building.rename(folder)  # the cache holds complete stores only
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    relocate(folder, old=building, new=folder)
    return folder


def relocate(folder: Path, old: Path, new: Path) -> None:
    """Point the artifact locations recorded in a moved store at its new folder."""
    with sqlite3.connect(folder / "mlflow.db") as db:
        for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
            db.execute(
                f"UPDATE {table} SET {column} = replace({column}, ?, ?)",
                (old.resolve().as_uri(), new.resolve().as_uri()),
            )


def open_copy(layout: Layout, into: Path, cache: Path | None = None) -> str:
    """Copy the cached store of `layout` into `into`; return the copy's tracking URI."""
    source = ensure(layout, cache)
    shutil.copytree(source, into, dirs_exist_ok=True)
    relocate(into, old=source, new=into)
    return _uri(into)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("judged", "pending"), default="judged")
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--scenarios", type=int, default=500)
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    layout = Layout(args.kind, args.models, args.prompts, args.scenarios)
    folder = ensure(layout, args.cache)
    print(f"{layout.n_runs} runs in experiment {EXPERIMENT!r}: {_uri(folder)}")


if __name__ == "__main__":
    main()
