"""Phase A: run the grid model by model, record every cell in MLflow, resume by cell key."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from tipbench._errors import BackendError, UnusableOutput
from tipbench._phase import SilentProgress
from tipbench.backends import (
    Backend,
    Generation,
    RequestRecord,
    RetryPolicy,
    call_with_retries,
    constraints_for,
    generate_structured,
    open_checked,
    path_name,
    resident,
)
from tipbench.collect._cache import CACHE_FILE, ResponseCache, request_key
from tipbench.collect._config import CollectConfig
from tipbench.collect._free_first import FreeFirst
from tipbench.collect._grid import Cell, plan_grid
from tipbench.collect._ledger import CollectProgress, CollectResult, Ledger
from tipbench.collect._parse import parse_tips
from tipbench.collect._record import CellOutcome
from tipbench.suite import load_suite
from tipbench.tracking import data_dir, experiment_is_new, open_in_background


def collect(
    config: CollectConfig,
    *,
    tracking_uri: str | None = None,
    progress: CollectProgress | None = None,
    retry: RetryPolicy | None = None,
    parent_tags: Mapping[str, str] | None = None,
) -> CollectResult:
    """Run the grid of `config` and record one MLflow run per cell under a parent run
    (tagged with `parent_tags` besides its own, e.g. the orchestrator's task and try).

    Cells already recorded successfully (same cell key) are skipped; failed or unfinished
    ones are retried and replace their old run, so a re-run never duplicates a cell.

    Raises:
        TipbenchError: for bad input (suite, prompt version, model, size) before any
            generation, or when the tracking store cannot be used.
    """
    progress = progress or SilentProgress()
    suite = load_suite(config.suite)
    prompts = [suite.prompt(version) for version in config.prompts]
    scenarios = suite.select_scenarios(config.n_scenarios, config.scenarios)
    # a new experiment holds no cell yet: generation need not wait for the store
    ahead = experiment_is_new(tracking_uri, config.experiment)
    progress.note("opening the tracking store")
    opening = open_in_background(tracking_uri)
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
    ledger = Ledger(opening, config, suite, cells, progress, ahead=ahead, tags=parent_tags)
    interrupted = False
    cache: ResponseCache | None = None
    try:
        if not ahead:
            ledger.open()
        if config.use_cache:
            cache = ResponseCache(data_dir() / CACHE_FILE)
        block = _Block(config, retry or RetryPolicy(), cache, ledger, progress)
        for backend, _ in backends:
            block.run(backend, [cell for cell in cells if cell.model == backend.spec])
        result = ledger.open()  # so that the parent run exists when nothing was generated
        result.model_loads = block.loads
        return result
    except BaseException as exc:
        # Ctrl-C, SIGTERM, an orchestrator's stop or time limit: not an error of the grid
        interrupted = not isinstance(exc, Exception)
        raise
    finally:
        if cache is not None:
            cache.close()
        ledger.close(interrupted)


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


@dataclass
class _Block:
    """Runs one model's cells: cached answers first, then one load for the rest."""

    config: CollectConfig
    retry: RetryPolicy
    cache: ResponseCache | None
    ledger: Ledger
    progress: CollectProgress
    loads: Counter[str] = field(default_factory=Counter)

    def run(self, backend: Backend, cells: list[Cell]) -> None:
        todo = []
        for cell in filter(self.ledger.wants, cells):
            outcome = self._from_cache(cell)
            if outcome is not None:
                self.ledger.record(outcome)
            else:
                todo.append(cell)
        if not todo:
            return
        loaded = False
        try:
            with resident(backend, self.retry, self.progress.note):
                loaded = True
                self.loads[str(backend.spec)] += 1
                self._generate_all(backend, todo, FreeFirst())
        except BackendError as exc:
            if loaded:  # generation turns its errors into outcomes: this is not one
                raise
            for cell in todo:
                failed = CellOutcome(cell, error=f"load failed: {exc}", finished_at=time.time())
                self.ledger.record(failed)

    def _generate_all(self, backend: Backend, cells: list[Cell], free_first: FreeFirst) -> None:
        """Generate the cells still wanted: generated ahead of the store, the recorded cells
        it reveals are not generated again. Under `auto`, `free_first` learns from the
        block's cells whether to ask freely first."""

        def generate(cell: Cell) -> CellOutcome | None:
            return self._generate(backend, cell, free_first) if self.ledger.wants(cell) else None

        if backend.parallel_requests and self.config.concurrency > 1:
            with ThreadPoolExecutor(self.config.concurrency) as pool:
                try:
                    for outcome in pool.map(generate, cells):
                        if outcome is not None:
                            self.ledger.record(outcome)
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
        else:
            for cell in cells:
                if (outcome := generate(cell)) is not None:
                    self.ledger.record(outcome)

    def _from_cache(self, cell: Cell) -> CellOutcome | None:
        if self.cache is None:
            return None
        hit = self.cache.get(_cache_key(cell))
        if hit is None:
            return None
        generation, latency, attempts, path = hit
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
            path or _cached_path(cell, generation),
        )

    def _generate(self, backend: Backend, cell: Cell, free_first: FreeFirst) -> CellOutcome:
        """Generate and parse one cell, retrying transient failures and unusable output."""
        self.progress.start(cell.name)
        tries: list[CellOutcome] = []  # attempts that returned output
        requests: list[RequestRecord] = []  # every request made, for the cell's trace
        attempts = 0

        def attempt(number: int) -> CellOutcome:
            nonlocal attempts
            attempts = number
            learning = cell.structured == "auto"
            answer = generate_structured(
                backend,
                cell.structured,
                lambda constraint: cell.request(number, constraint),
                lambda text: parse_tips(text, cell.n_tips),
                lambda parsed: len(parsed.tips) >= cell.n_tips,
                free_first.constraints() if learning else None,
                requests,
            )
            if learning:
                free_first.observe(answer.requests)
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
                raise UnusableOutput(f"unparsable output: {generation.text[:120]!r}")
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
                requests=tuple(requests),
            )
        outcome = replace(outcome, requests=tuple(requests))
        if self.cache is not None and outcome.generation is not None:
            self.cache.put(
                _cache_key(cell),
                outcome.generation,
                outcome.latency_s,
                outcome.attempts,
                outcome.path,
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
    """The path of an answer cached before paths were: under `auto`, a constrained one was
    a retry."""
    tried = constraints_for(cell.structured)
    if cell.structured == "auto" and not generation.structured:
        tried = tried[:1]
    return path_name(tried)
