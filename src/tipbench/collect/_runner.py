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
    open_checked,
    path_name,
    resident,
)
from tipbench.collect._answer import answer_cell, cut_off
from tipbench.collect._cache import CACHE_FILE, ResponseCache, request_key
from tipbench.collect._config import CollectConfig
from tipbench.collect._grid import Cell, plan_grid
from tipbench.collect._known_paths import shipped_choice
from tipbench.collect._ledger import CollectProgress, CollectResult, Ledger
from tipbench.collect._parse import TipWords, parse_answer
from tipbench.collect._path_choice import PathChoice
from tipbench.collect._path_memory import MEMORY_FILE, PathMemory
from tipbench.collect._probe import Probe
from tipbench.collect._record import CellOutcome
from tipbench.suite import Scenario, load_suite
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
        words=TipWords.of(suite.rubric),
    )
    ledger = Ledger(opening, config, suite, cells, progress, ahead=ahead, tags=parent_tags)
    interrupted = False
    cache: ResponseCache | None = None
    memory: PathMemory | None = None
    block: _Block | None = None
    try:
        if not ahead:
            ledger.open()
        if config.use_cache:
            cache = ResponseCache(data_dir() / CACHE_FILE)
        if config.structured == "auto":
            memory = PathMemory(data_dir() / MEMORY_FILE)
        block = _Block(
            config, retry or RetryPolicy(), cache, memory, ledger, progress, suite.scenarios
        )
        for backend, _ in backends:
            block.run(backend, [cell for cell in cells if cell.model == backend.spec])
        result = ledger.open()  # so that the parent run exists when nothing was generated
        result.model_loads = block.loads
        result.paths = {model: choice.describe() for model, choice in block.paths.items()}
        return result
    except BaseException as exc:
        # Ctrl-C, SIGTERM, an orchestrator's stop or time limit: not an error of the grid
        interrupted = not isinstance(exc, Exception)
        raise
    finally:
        if cache is not None:
            cache.close()
        if memory is not None:
            memory.close()
        if block is not None:
            ledger.requests = block.requests
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
    """Runs one model's cells: its path chosen, cached answers, then one load for the rest."""

    config: CollectConfig
    retry: RetryPolicy
    cache: ResponseCache | None
    memory: PathMemory | None  # the probe's answers, under `--structured auto`
    ledger: Ledger
    progress: CollectProgress
    scenarios: tuple[Scenario, ...]  # the suite's, that the probe asks about
    loads: Counter[str] = field(default_factory=Counter)
    paths: dict[str, PathChoice] = field(default_factory=dict)  # model -> its path
    requests: int = 0  # generation requests made, the probe's included
    #: The probe's answers asked now, by request key, for the cells that ask the same.
    handed: dict[str, RequestRecord] = field(default_factory=dict)

    def run(self, backend: Backend, cells: list[Cell]) -> None:
        """Generate the model's `cells` that are still wanted (`cells`: all of its grid)."""
        todo = [cell for cell in cells if self.ledger.wants(cell)]
        if not todo:
            return
        choice = self._choose(backend, cells, ask=False)
        if choice is not None or self.memory is None:
            todo = self._replay(todo, choice)
        if not todo:
            return
        loaded = False
        try:
            with resident(backend, self.retry, self.progress.note):
                loaded = True
                self.loads[str(backend.spec)] += 1
                if choice is None and self.memory is not None:
                    self.progress.note(f"choosing the generation path of {backend.spec}")
                    choice = self._choose(backend, cells, ask=True)
                    todo = self._replay(todo, choice)
                self._generate_all(backend, todo, choice)
        except BackendError as exc:
            if loaded:  # generation turns its errors into outcomes: this is not one
                raise
            for cell in todo:
                failed = CellOutcome(cell, error=f"load failed: {exc}", finished_at=time.time())
                self.ledger.record(failed)

    def _choose(self, backend: Backend, cells: list[Cell], *, ask: bool) -> PathChoice | None:
        """Under `auto`, the model's path: the experiment's, else the one tipbench ships for
        its model file (recognised by its print, if `ask`, where no file names it), else its
        probe's (from memory, or asked if `ask`); None when it cannot be known without
        asking."""
        if self.memory is None:
            return None
        model = str(backend.spec)
        if model in self.paths:
            return self.paths[model]
        recorded = self.ledger.recorded_path(model)
        shipped, asked = shipped_choice(backend, self.memory, ask=ask and recorded is None)
        self.requests += asked
        probe = Probe(self.memory, self.retry, backend, ask=ask and not (recorded or shipped))
        probed = shipped or probe.choose(cells, self.scenarios)
        self.handed = probe.answers
        if recorded is not None and probed is not None and probed.path != recorded.path:
            self.ledger.open().warnings.append(
                f"{model} keeps the {recorded.path} path of its earlier cells in "
                f"{self.config.experiment!r}, so that its prompts compare on equal terms; its "
                f"probe now favours {probed.path}: collect into a new experiment to take it"
            )
        choice = recorded or probed
        if choice is not None:
            self.paths[model] = choice
            self.requests += choice.asked
            self.ledger.note_path(model, choice)
        return choice

    def _replay(self, cells: list[Cell], choice: PathChoice | None) -> list[Cell]:
        """Record the cells whose answers are cached; return the others."""
        todo = []
        for cell in cells:
            outcome = self._from_cache(cell, choice)
            if outcome is not None:
                self.ledger.record(outcome)
            else:
                todo.append(cell)
        return todo

    def _generate_all(self, backend: Backend, cells: list[Cell], choice: PathChoice | None) -> None:
        """Generate the cells still wanted: generated ahead of the store, the recorded cells
        it reveals are not generated again. Under `auto`, every cell takes `choice`'s path."""

        def generate(cell: Cell) -> CellOutcome | None:
            return self._generate(backend, cell, choice) if self.ledger.wants(cell) else None

        def record(outcome: CellOutcome | None) -> None:
            if outcome is not None:
                self.requests += len(outcome.requests)
                self.ledger.record(outcome)

        handed = len(self.handed)
        try:
            if backend.parallel_requests and self.config.concurrency > 1:
                with ThreadPoolExecutor(self.config.concurrency) as pool:
                    try:
                        for outcome in pool.map(generate, cells):
                            record(outcome)
                    except BaseException:
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise
            else:
                for cell in cells:
                    record(generate(cell))
        finally:  # the probe counted the answers it handed to cells when it asked them
            self.requests -= handed - len(self.handed)
            self.handed = {}

    def _from_cache(self, cell: Cell, choice: PathChoice | None) -> CellOutcome | None:
        if self.cache is None:
            return None
        hit = self.cache.get(_cache_key(cell, choice))
        if hit is None:
            return None
        generation, latency, attempts, path = hit
        parsed = parse_answer(generation.text, cell.n_tips, cut_off(generation, cell))
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

    def _generate(self, backend: Backend, cell: Cell, choice: PathChoice | None) -> CellOutcome:
        """Generate and parse one cell, retrying transient failures and unusable output."""
        self.progress.start(cell.name)
        tries: list[CellOutcome] = []  # attempts that returned output
        requests: list[RequestRecord] = []  # every request made, for the cell's trace
        attempts = 0

        def attempt(number: int) -> CellOutcome:
            nonlocal attempts
            attempts = number
            answer = answer_cell(
                backend,
                cell,
                number,
                choice.constraints if choice is not None else None,
                requests,
                lambda request: self.handed.pop(request_key(cell.model_identity, request), None),
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
                threads=_threads_of(backend),
            )
        outcome = replace(outcome, requests=tuple(requests), threads=_threads_of(backend))
        if self.cache is not None and outcome.generation is not None:
            self.cache.put(
                _cache_key(cell, choice),
                outcome.generation,
                outcome.latency_s,
                outcome.attempts,
                outcome.path,
            )
        return outcome


def _threads_of(backend: Backend) -> int | None:
    """The threads the cell's requests ran on (the last one's: a model gives way to one
    loaded after it between two requests), for an embedded model."""
    choice = backend.threads
    return None if choice is None else choice.threads


def _cache_key(cell: Cell, choice: PathChoice | None) -> str:
    """The cell's cache key: its first request (under `auto`, as its model's path asks it:
    on the schema path with the schema, so that another schema's answer is not this
    cell's), its structured mode unless `schema` (whose answers were cached under the bare
    request before the modes existed) and, under `auto`, its model's path."""
    identity = cell.model_identity
    if cell.structured != "schema":
        identity = f"{identity}|structured={cell.structured}"
    if choice is None:
        return request_key(identity, cell.request())
    first = cell.request(constraint=choice.constraints[0])
    return request_key(f"{identity}|path={choice.path}", first)


def _cached_path(cell: Cell, generation: Generation) -> str:
    """The path of an answer cached before paths were: under `auto`, a constrained one was
    a retry."""
    tried = constraints_for(cell.structured)
    if cell.structured == "auto" and not generation.structured:
        tried = tried[:1]
    return path_name(tried)
