"""Phase A: run the grid model by model, record every cell in MLflow, resume by cell key."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from tipbench._errors import BackendError, GenerationFailed
from tipbench.backends import (
    DEFAULT_OPENAI_BASE_URL,
    Backend,
    BackendOptions,
    RetryPolicy,
    call_with_retries,
    check_size,
    open_backend,
)
from tipbench.collect._cache import ResponseCache, request_key
from tipbench.collect._config import CollectConfig
from tipbench.collect._grid import Cell, plan_grid
from tipbench.collect._parse import parse_tips
from tipbench.collect._record import CellOutcome, build_record
from tipbench.suite import Suite, content_hash, load_suite
from tipbench.tracking import KIND_COLLECTION, BackgroundWriter, TrackingStore, data_dir, write_run


class CollectProgress(Protocol):
    """Receives progress while a grid runs (the CLI draws a bar from it)."""

    def begin(self, total: int, done: int) -> None: ...
    def advance(self, outcome: CellOutcome) -> None: ...
    def note(self, message: str) -> None: ...


class _Silent:
    def begin(self, total: int, done: int) -> None: ...
    def advance(self, outcome: CellOutcome) -> None: ...
    def note(self, message: str) -> None: ...


@dataclass
class CollectResult:
    """What a collection did; `exit_code` is 0 only if every cell is recorded successfully."""

    experiment: str
    tracking_uri: str
    parent_run_id: str
    total: int
    skipped: int = 0
    succeeded: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (cell, error)
    unwritten: list[tuple[str, str]] = field(default_factory=list)  # (cell, error)
    model_loads: Counter[str] = field(default_factory=Counter)
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.failed or self.unwritten else 0


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
    progress = progress or _Silent()
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
    )

    progress.note("opening the tracking store")
    store = TrackingStore(tracking_uri)
    experiment_id = store.experiment_id(config.experiment, create=True)
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
    options = BackendOptions(
        ollama_url=config.ollama_url,
        openai_base_url=config.openai_base_url or DEFAULT_OPENAI_BASE_URL,
    )
    backends = []
    for spec in config.model_specs():
        backend = open_backend(spec, options)
        info = backend.describe()
        check_size(spec, info, config.max_model_b, config.allow_unknown_size)
        backends.append((backend, info.identity))
    return backends


def _collection_params(config: CollectConfig, suite: Suite) -> dict[str, str]:
    return {
        "models": ",".join(config.models),
        "prompts": ",".join(config.prompts),
        "n_tips": str(config.n_tips),
        "n_scenarios": str(config.n_scenarios),
        "temperature": str(config.temperature),
        "seed": str(config.seed),
        "max_model_b": str(config.max_model_b),
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
        self.progress.note(f"loading {backend.spec}")
        try:  # unload even when Ctrl-C comes during the load
            try:
                call_with_retries(lambda _: backend.load(), self.retry)
            except BackendError as exc:
                for cell in todo:
                    failed = CellOutcome(cell, error=f"load failed: {exc}", finished_at=time.time())
                    self.record(failed)
                return
            self.loads[str(backend.spec)] += 1
            if backend.parallel_requests and self.config.concurrency > 1:
                with ThreadPoolExecutor(self.config.concurrency) as pool:
                    try:
                        for outcome in pool.map(lambda c: self._generate(backend, c), todo):
                            self.record(outcome)
                    except BaseException:
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise
            else:
                for cell in todo:
                    self.record(self._generate(backend, cell))
        finally:
            self.progress.note(f"unloading {backend.spec}")
            try:
                backend.unload()
            except BackendError as exc:
                self.progress.note(f"could not unload {backend.spec}: {exc}")

    def _from_cache(self, cell: Cell) -> CellOutcome | None:
        if self.cache is None:
            return None
        hit = self.cache.get(request_key(cell.model_identity, cell.request()))
        if hit is None:
            return None
        generation, latency, attempts = hit
        parsed = parse_tips(generation.text, cell.n_tips)
        return CellOutcome(
            cell, parsed.tips, parsed.method, generation, latency, attempts, True, None, time.time()
        )

    def _generate(self, backend: Backend, cell: Cell) -> CellOutcome:
        """Generate and parse one cell, retrying transient failures and unusable output."""
        tries: list[CellOutcome] = []  # attempts that returned output
        attempts = 0

        def attempt(number: int) -> CellOutcome:
            nonlocal attempts
            attempts = number
            started = time.perf_counter()
            generation = backend.generate(cell.request(number))
            latency = time.perf_counter() - started
            parsed = parse_tips(generation.text, cell.n_tips)
            tries.append(
                CellOutcome(
                    cell,
                    parsed.tips,
                    parsed.method,
                    generation,
                    latency,
                    number,
                    finished_at=time.time(),
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
            key = request_key(cell.model_identity, cell.request())
            self.cache.put(key, outcome.generation, outcome.latency_s, outcome.attempts)
        return outcome
