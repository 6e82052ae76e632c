"""Collect's record in the experiment: the cells it holds already, the collection's parent run,
and the writer that records each cell as it is done.

MLflow takes seconds to import and set up, so the store opens in the background
(`open_in_background`) while the models are checked (the experiment is created only once
they pass). Generation then waits for it, as the
experiment's recorded cells decide what is generated, unless the experiment is new (`ahead`):
then the first cells are generated meanwhile and recorded once the store is open.

The collect lock is held from `open` to `close`. On an MLflow server it is a lease that a
stalled collection can lose to another (a task runner that outlived its Airflow worker, and
the task's retry): before recording a cell, and at the end, a collection that finds it has
lost it waits for the lock again, repairs what the two wrote at once (one run per cell) and
skips the cells recorded meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Protocol

from tipbench._phase import PhaseResult
from tipbench._words import counted
from tipbench.collect._cell_writer import CellWriter
from tipbench.collect._config import CollectConfig
from tipbench.collect._duplicates import DuplicateReport, resolve_duplicates
from tipbench.collect._grid import Cell
from tipbench.collect._path_choice import PathChoice
from tipbench.collect._record import CellOutcome
from tipbench.collect._recorded_paths import RecordedPaths
from tipbench.suite import Suite, content_hash
from tipbench.tracking import (
    KIND_COLLECTION,
    BackgroundWriter,
    CellRun,
    LockHold,
    TrackingStore,
    experiment_lock,
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
    experiment_id: str = ""
    genai_records: bool = True  # whether MLflow's GenAI views show the cells
    paths: dict[str, str] = field(default_factory=dict)  # model -> its path, and why
    requests: int = 0  # generation requests made, the probe's included


@dataclass
class _Open:
    """The ledger once the store has answered, while it holds the experiment's lock."""

    store: TrackingStore
    experiment_id: str
    parent: str
    done: frozenset[str]  # keys of the cells recorded successfully before this collection
    writer: BackgroundWriter
    cells: CellWriter  # records each cell through `writer`
    result: CollectResult
    paths: RecordedPaths  # each model's path as the experiment records it


class Ledger:
    """Which cells to generate, and where each outcome goes; `open` it, `close` it at the end.

    `open` waits for the store, takes the experiment's collect lock (waiting while another
    collection holds it), reads the recorded cells and opens the parent run. Until then,
    every cell is wanted if the ledger may run `ahead`; an outcome generated ahead for a
    cell that another collection recorded meanwhile is dropped, so nothing is duplicated.
    """

    def __init__(
        self,
        opening: Future[TrackingStore],
        config: CollectConfig,
        suite: Suite,
        cells: list[Cell],
        progress: CollectProgress,
        *,
        ahead: bool,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        self.tags = dict(tags or {})
        self.opening = opening
        self.config = config
        self.suite = suite
        self.cells = cells
        self.progress = progress
        self.ahead = ahead
        self._open: _Open | None = None
        self._held = ExitStack()  # the lock
        self._hold = LockHold()  # asked before each write
        self._chosen: dict[str, PathChoice] = {}  # this collection's paths, by model
        self.requests = 0  # generation requests made (the runner counts them)

    def recorded_path(self, model: str) -> PathChoice | None:
        """The path the experiment holds for `model`'s cells (None: none yet, or the store
        is not open because the experiment is new)."""
        return None if self._open is None else self._open.paths.choice(model)

    def note_path(self, model: str, choice: PathChoice) -> None:
        """Record the path `model`'s cells take on the parent run (once it is open)."""
        self._chosen[model] = choice
        if self._open is not None:
            self._open.paths.record(self._open.writer, self._open.parent, self._chosen)

    def wants(self, cell: Cell) -> bool:
        """Whether `cell` is to be generated (from any thread)."""
        opened = self._open
        if opened is None:
            return self.ahead
        return cell.key not in opened.done

    def open(self) -> CollectResult:
        """Wait for the store and set the collection up in it (once; main thread)."""
        return self._opened().result

    def record(self, outcome: CellOutcome) -> None:
        """Queue the run that records `outcome` (main thread)."""
        opened = self._opened()
        if not self._hold.held():
            self._regain(opened)
        if outcome.cell.key in opened.done:  # recorded meanwhile by another collection
            return
        opened.cells.submit(outcome)
        result = opened.result
        if outcome.ok:
            result.succeeded += 1
        else:
            result.failed.append((outcome.cell.name, outcome.error or ""))
        self.progress.advance(outcome)

    def close(self, interrupted: bool) -> None:
        """Write what is queued, end the parent run and release the lock (if opened)."""
        opened = self._open
        if opened is None:
            return
        result = opened.result
        result.interrupted = interrupted
        result.requests = self.requests
        try:
            self.progress.note("writing the last runs to MLflow")
            opened.cells.end()
            result.unwritten = [(f.label, f.error) for f in opened.writer.close()]
            unguarded = not self._hold.held() or self._hold.lapsed  # some writes may overlap
            if unguarded and not interrupted:  # else the next collection repairs them
                self._relock(opened)
            status = "KILLED" if interrupted else "FAILED" if result.exit_code else "FINISHED"
            opened.store.close_parent(
                opened.parent,
                status,
                {
                    "cells_total": result.total,
                    "cells_skipped": result.skipped,
                    "cells_ok": result.succeeded,
                    "cells_failed": len(result.failed),
                    "requests": result.requests,
                },
            )
        finally:
            self._held.close()

    def _opened(self) -> _Open:
        if self._open is None:
            store = self.opening.result()
            experiment_id = store.experiment_id(self.config.experiment, create=True)
            self._hold = self._held.enter_context(
                experiment_lock(store, experiment_id, LOCK_SCOPE, waiting=self._waiting)
            )
            try:
                self._open = self._set_up(store, experiment_id)
            except BaseException:
                self._held.close()
                raise
        return self._open

    def _waiting(self, holder: str) -> None:
        experiment = self.config.experiment
        self.progress.note(f"waiting for the collection of {holder} into {experiment!r}")

    def _regain(self, opened: _Open) -> None:
        """The lease lapsed while this collection stalled: let the writes queued so far
        land, take the lock again, repair and skip what was recorded meanwhile."""
        self.progress.note(
            f"lost the collect lock of {self.config.experiment!r} (this collection stalled "
            "longer than its lease): waiting for it again"
        )
        landed = threading.Event()
        opened.writer.submit("lock", lambda client: landed.set())
        landed.wait()
        self._relock(opened)
        before = opened.done
        recorded = opened.store.cell_runs(opened.experiment_id)
        opened.done = frozenset(run.cell_key for run in recorded if run.finished)
        meanwhile = counted(len(opened.done - before), "cell")
        self.progress.note(f"holding the collect lock again: {meanwhile} recorded meanwhile")

    def _relock(self, opened: _Open) -> None:
        """Release the lock (if still ours), take it again and leave one run per cell."""
        self._held.close()
        self._held = ExitStack()
        self._hold = self._held.enter_context(
            experiment_lock(opened.store, opened.experiment_id, LOCK_SCOPE, waiting=self._waiting)
        )
        found, repaired = (
            opened.result.duplicates,
            resolve_duplicates(opened.store, opened.experiment_id),
        )
        opened.result.duplicates = DuplicateReport(
            found.cells + repaired.cells,
            found.removed_runs + repaired.removed_runs,
            found.parents + repaired.parents,
            found.removed_parents + repaired.removed_parents,
        )

    def _set_up(self, store: TrackingStore, experiment_id: str) -> _Open:
        config, suite, cells = self.config, self.suite, self.cells
        duplicates = resolve_duplicates(store, experiment_id)
        existing = store.cell_runs(experiment_id)
        done = frozenset(run.cell_key for run in existing if run.finished)
        stale: dict[str, list[CellRun]] = {}
        for run in existing:
            if not run.finished:
                stale.setdefault(run.cell_key, []).append(run)
        parent = store.open_parent(
            experiment_id,
            KIND_COLLECTION,
            content_hash(sorted(cell.key for cell in cells)),
            name=f"collect {time.strftime('%Y-%m-%d %H:%M')}",
            params=_collection_params(config, suite),
            tags=self.tags,
        )
        skipped = sum(cell.key in done for cell in cells)
        result = CollectResult(config.experiment, store.uri, parent, len(cells), skipped)
        result.experiment_id, result.genai_records = experiment_id, config.genai_records
        result.duplicates = duplicates
        available = len(suite.scenarios)
        if config.n_scenarios > available:
            result.warnings.append(
                f"asked for {counted(config.n_scenarios, 'scenario')}, but suite "
                f"{suite.name!r} has {available}: ran all {available}"
            )
        paths = RecordedPaths.read(store, experiment_id, existing)
        result.warnings.extend(paths.mixed())
        other_modes = sorted({run.structured for run in existing if run.ok} - {config.structured})
        if other_modes:
            result.warnings.append(
                f"experiment {config.experiment!r} also holds cells collected with "
                f"--structured {' and '.join(other_modes)}: its leaderboard would compare "
                "answers made differently; collect each mode into its own experiment"
            )
        self.progress.begin(len(cells), skipped)
        writer = BackgroundWriter(store)
        cell_writer = CellWriter(
            writer,
            experiment_id,
            parent,
            suite.rubric,
            with_diversity=config.diversity,
            genai=config.genai_records,
            new_experiment=not existing,
            stale=stale,
        )
        cell_writer.begin(list({cell.prompt.version: cell.prompt for cell in cells}.values()))
        if self._chosen:  # paths chosen while the store opened
            paths.record(writer, parent, self._chosen)
        return _Open(store, experiment_id, parent, done, writer, cell_writer, result, paths)


def _collection_params(config: CollectConfig, suite: Suite) -> dict[str, str]:
    return {
        "models": ",".join(config.models),
        "prompts": ",".join(config.prompts),
        "n_tips": str(config.n_tips),
        "n_scenarios": str(config.n_scenarios),
        **({"scenarios": ",".join(config.scenarios)} if config.scenarios else {}),
        "temperature": str(config.temperature),
        "seed": str(config.seed),
        "max_model_b": str(config.max_model_b),
        "structured": config.structured,
        "suite": suite.label,
        "suite_hash": suite.hash,
    }
