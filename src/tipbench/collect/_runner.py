"""Phase A: run the grid model by model, record every cell in MLflow, resume by cell key."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from tipbench._errors import BackendError, GenerationFailed
from tipbench._phase import PhaseResult, SilentProgress
from tipbench._words import counted
from tipbench.backends import (
    Backend,
    Generation,
    RetryPolicy,
    call_with_retries,
    constraints_for,
    generate_structured,
    open_checked,
    path_name,
    resident,
)
from tipbench.collect._cache import ResponseCache, request_key
from tipbench.collect._config import CollectConfig
from tipbench.collect._duplicates import DuplicateReport, resolve_duplicates
from tipbench.collect._grid import Cell, plan_grid
from tipbench.collect._parse import parse_tips
from tipbench.collect._record import CellOutcome, build_record
from tipbench.suite import Suite, content_hash, load_suite
from tipbench.tracking import (
    KIND_COLLECTION,
    BackgroundWriter,
    TrackingStore,
    data_dir,
    experiment_lock,
    write_run,
)

LOCK_SCOPE = "collect"


class CollectProgress(Protocol):
    """Receives progress while a grid runs (the CLI draws a bar from it)."""

    def begin(self, total: int, done: int) -> None: ...
    def start(self, label: str) -> None: ...  # a cell is being generated now
    def advance(self, outcome: CellOutcome) -> None: ...  # a cell is done
    def note(self, message: str) -> None: ...


@dataclass
class CollectResult(PhaseResult):
    """What a collection did; `exit_code` is 0 only if every cell is recorded successfully.

    `failed` and `unwritten` name cells (`model|prompt_version|scenario_id`).
    """

    experiment: str
    tracking_uri: str
    parent_run_id: str
    total: int
    skipped: int = 0
    succeeded: int = 0
    model_loads: Counter[str] = field(default_factory=Counter)
    duplicates: DuplicateReport = field(default_factory=DuplicateReport)
    warnings: list[str] = field(default_factory=list)


def collect(
    config: CollectConfig,
    *,
    tracking_uri: str | None = None,
    progress: CollectProgress | None = None,
    retry: RetryPolicy | None = None,
) -> CollectResult:
    """Run the grid of `config` and record one MLflow run per cell under a parent run.

    Cells already recorded successfully (same cell key) are skipped; failed or unfinished
    ones are retried and replace their old run, so a re-run never duplicates a cell.

    Raises:
        TipbenchError: for bad input (suite, prompt version, model, size) before any
            generation, or when the tracking store cannot be used.
    """
    progress = progress or SilentProgress()
    suite = load_suite(config.suite)
    prompts = [suite.prompt(version) for version in config.prompts]
    scenarios = suite.select_scenarios(config.n_scenarios)
    backends = preflight(config)
    cells = plan_grid(
        [(backend.spec, identity) for backend, identity in backends],
        prompts,
        scenarios,
        n_tips=config.n_tips,
        temperature=config.temperature,
        seed=config.seed,
        max_tokens=config.generation_tokens,
        suite=suite.label,
        structured=config.structured,
    )

    progress.note("opening the tracking store")
    store = TrackingStore(tracking_uri)
    experiment_id = store.experiment_id(config.experiment, create=True)

    def waiting(holder: str) -> None:
        progress.note(f"waiting for the collection of {holder} into {config.experiment!r}")

    with experiment_lock(store, experiment_id, LOCK_SCOPE, waiting=waiting):
        return _collect_locked(
            config, suite, backends, cells, store, experiment_id, progress, retry
        )


def _collect_locked(
    config: CollectConfig,
    suite: Suite,
    backends: list[tuple[Backend, str]],
    cells: list[Cell],
    store: TrackingStore,
    experiment_id: str,
    progress: CollectProgress,
    retry: RetryPolicy | None,
) -> CollectResult:
    """The collection proper, while this process alone writes cells to the experiment."""
    duplicates = resolve_duplicates(store, experiment_id)
    existing = store.cell_runs(experiment_id)
    done = {run.cell_key for run in existing if run.finished}
    stale: dict[str, list[str]] = {}
    for run in existing:
        if not run.finished:
            stale.setdefault(run.cell_key, []).append(run.run_id)
    pending = [cell for cell in cells if cell.key not in done]
    parent = store.open_parent(
        experiment_id,
        KIND_COLLECTION,
        content_hash(sorted(cell.key for cell in cells)),
        name=f"collect {time.strftime('%Y-%m-%d %H:%M')}",
        params=_collection_params(config, suite),
    )
    result = CollectResult(
        config.experiment, store.uri, parent, len(cells), len(cells) - len(pending)
    )
    result.duplicates = duplicates
    available = len(suite.scenarios)
    if config.n_scenarios > available:
        result.warnings.append(
            f"asked for {counted(config.n_scenarios, 'scenario')}, but suite {suite.name!r} has "
            f"{available}: ran all {available}"
        )
    other_modes = sorted({run.structured for run in existing if run.ok} - {config.structured})
    if other_modes:
        result.warnings.append(
            f"experiment {config.experiment!r} also holds cells collected with --structured "
            f"{' and '.join(other_modes)}: its leaderboard would compare answers made "
            "differently; collect each mode into its own experiment"
        )
    progress.begin(len(cells), result.skipped)

    writer = BackgroundWriter(store)
    cache = ResponseCache(data_dir() / "cache.sqlite") if config.use_cache else None

    def record(outcome: CellOutcome) -> None:
        run = build_record(
            outcome,
            suite.rubric,
            with_diversity=config.diversity,
            replaces=tuple(stale.get(outcome.cell.key, ())),
        )
        writer.submit(run.run_name, lambda client: write_run(client, experiment_id, run, parent))
        if outcome.ok:
            result.succeeded += 1
        else:
            result.failed.append((outcome.cell.name, outcome.error or ""))
        progress.advance(outcome)

    block = _Block(config, retry or RetryPolicy(), cache, record, progress, result.model_loads)
    try:
        for backend, _ in backends:
            block.run(backend, [cell for cell in pending if cell.model == backend.spec])
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    finally:
        progress.note("writing the last runs to MLflow")
        result.unwritten = [(f.label, f.error) for f in writer.close()]
        if cache is not None:
            cache.close()
        status = "KILLED" if result.interrupted else "FAILED" if result.exit_code else "FINISHED"
        store.close_parent(
            parent,
            status,
            {
                "cells_total": result.total,
                "cells_skipped": result.skipped,
                "cells_ok": result.succeeded,
                "cells_failed": len(result.failed),
            },
        )
    return result


def preflight(config: CollectConfig) -> list[tuple[Backend, str]]:
    """Open every model's backend and apply the size guard before anything is generated.

    Returns each backend with its model's identity (which changes with the weights).
    """
    options = config.backend_options()
    opened = [
        open_checked(spec, options, config.max_model_b, config.allow_unknown_size)
        for spec in config.model_specs()
    ]
    return [(model.backend, model.info.identity) for model in opened]


def _collection_params(config: CollectConfig, suite: Suite) -> dict[str, str]:
    return {
        "models": ",".join(config.models),
        "prompts": ",".join(config.prompts),
        "n_tips": str(config.n_tips),
        "n_scenarios": str(config.n_scenarios),
        "temperature": str(config.temperature),
        "seed": str(config.seed),
        "max_model_b": str(config.max_model_b),
        "structured": config.structured,
        "suite": suite.label,
        "suite_hash": suite.hash,
    }


@dataclass
class _Block:
    """Runs one model's cells: cached answers first, then one load for the rest."""

    config: CollectConfig
    retry: RetryPolicy
    cache: ResponseCache | None
    record: Callable[[CellOutcome], None]
    progress: CollectProgress
    loads: Counter[str]

    def run(self, backend: Backend, cells: list[Cell]) -> None:
        todo = []
        for cell in cells:
            outcome = self._from_cache(cell)
            if outcome is not None:
                self.record(outcome)
            else:
                todo.append(cell)
        if not todo:
            return
        loaded = False
        try:
            with resident(backend, self.retry, self.progress.note):
                loaded = True
                self.loads[str(backend.spec)] += 1
                self._generate_all(backend, todo)
        except BackendError as exc:
            if loaded:  # generation turns its errors into outcomes: this is not one
                raise
            for cell in todo:
                failed = CellOutcome(cell, error=f"load failed: {exc}", finished_at=time.time())
                self.record(failed)

    def _generate_all(self, backend: Backend, cells: list[Cell]) -> None:
        if backend.parallel_requests and self.config.concurrency > 1:
            with ThreadPoolExecutor(self.config.concurrency) as pool:
                try:
                    for outcome in pool.map(lambda c: self._generate(backend, c), cells):
                        self.record(outcome)
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
        else:
            for cell in cells:
                self.record(self._generate(backend, cell))

    def _from_cache(self, cell: Cell) -> CellOutcome | None:
        if self.cache is None:
            return None
        hit = self.cache.get(_cache_key(cell))
        if hit is None:
            return None
        generation, latency, attempts = hit
        parsed = parse_tips(generation.text, cell.n_tips)
        return CellOutcome(
            cell,
            parsed.tips,
            parsed.method,
            generation,
            latency,
            attempts,
            True,
            None,
            time.time(),
            _cached_path(cell, generation),
        )

    def _generate(self, backend: Backend, cell: Cell) -> CellOutcome:
        """Generate and parse one cell, retrying transient failures and unusable output."""
        self.progress.start(cell.name)
        tries: list[CellOutcome] = []  # attempts that returned output
        attempts = 0

        def attempt(number: int) -> CellOutcome:
            nonlocal attempts
            attempts = number
            answer = generate_structured(
                backend,
                cell.structured,
                lambda constraint: cell.request(number, constraint),
                lambda text: parse_tips(text, cell.n_tips),
                lambda parsed: len(parsed.tips) >= cell.n_tips,
            )
            parsed, generation = answer.parsed, answer.generation
            tries.append(
                CellOutcome(
                    cell,
                    parsed.tips,
                    parsed.method,
                    generation,
                    answer.latency_s,
                    number,
                    finished_at=time.time(),
                    path=answer.path,
                )
            )
            if not parsed.tips:
                raise GenerationFailed(f"unparsable output: {generation.text[:120]!r}")
            return tries[-1]

        try:
            outcome, _ = call_with_retries(attempt, self.retry)
        except BackendError as exc:
            return CellOutcome(
                cell,
                generation=tries[-1].generation if tries else None,
                attempts=attempts,
                error=str(exc),
                finished_at=time.time(),
            )
        if self.cache is not None and outcome.generation is not None:
            self.cache.put(
                _cache_key(cell), outcome.generation, outcome.latency_s, outcome.attempts
            )
        return outcome


def _cache_key(cell: Cell) -> str:
    """The cell's cache key: its first request, and its structured mode unless `schema`
    (whose answers were cached under the bare request before the modes existed)."""
    identity = cell.model_identity
    if cell.structured != "schema":
        identity = f"{identity}|structured={cell.structured}"
    return request_key(identity, cell.request())


def _cached_path(cell: Cell, generation: Generation) -> str:
    """The path a cached answer took: under `auto`, a constrained one was a retry."""
    tried = constraints_for(cell.structured)
    if cell.structured == "auto" and not generation.structured:
        tried = tried[:1]
    return path_name(tried)
