"""Where runs are tracked: resolving the tracking URI and talking to the MLflow store."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tipbench._errors import ExperimentNotFound, TrackingError
from tipbench._redact import redact_text, redact_uri
from tipbench.tracking._cell_run import CellRun
from tipbench.tracking._layout import KIND_TAG, cell_run_status, cell_selection
from tipbench.tracking._new_store import TEMPLATES_DIR, is_new, seed_new_store, sqlite_path
from tipbench.tracking._probe import server_has_experiment
from tipbench.tracking._sql_reader import NotReadable, StoredRun, open_reader

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

# Keep MLflow's own HTTP retries short (tipbench retries writes itself, off the hot path)
# and its chatter out of the terminal: INFO about database migrations, and the "View run"
# links it writes to stdout when a run ends on a server (they would corrupt JSON output).
_MLFLOW_DEFAULTS = {
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "60",
    # tipbench reports its own progress: a bar per artifact read would break it up
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
}

# MLflow's largest page of search results: fewer queries and round trips (fetching 10,000
# runs from SQLite in 5,000-run pages takes 5-10% longer; bench/leaderboard_scale.py).
_PAGE_SIZE = 50_000

#: The kind of a collection's parent run (a cell run's layout: `_layout`).
KIND_COLLECTION = "collection"


def data_dir() -> Path:
    """tipbench's own folder: `$TIPBENCH_HOME`, else `$XDG_DATA_HOME/tipbench`."""
    if home := os.environ.get("TIPBENCH_HOME"):
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "tipbench"


def private_dir(path: Path) -> Path:
    """`path` as a folder only its owner can enter (0700), created if missing."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # not ours to change: leave it as it is
        path.chmod(0o700)
    return path


def resolve_tracking_uri(explicit: str | None = None) -> str:
    """`--tracking-uri`, else `$MLFLOW_TRACKING_URI`, else a SQLite store in the data folder
    (a private folder, the database readable by its owner only)."""
    if explicit:
        return explicit
    if env := os.environ.get("MLFLOW_TRACKING_URI"):
        return env
    database = private_dir(data_dir()) / "mlflow.db"
    with contextlib.suppress(OSError):
        database.touch(mode=0o600, exist_ok=True)  # SQLite takes an empty file as a new store
    return f"sqlite:///{database}"


def _artifact_root(database: Path) -> Path:
    """A SQLite store's artifacts live beside its database instead of in `./mlruns`."""
    return database.resolve().parent / "mlartifacts"


def check_experiment(uri: str | None, name: str) -> None:
    """Refuse an experiment that a local SQLite store does not have, without MLflow.

    Importing MLflow and setting up its store take seconds; a typo in `--experiment` is
    answered before that. For any other store, or a database that `has_experiment` cannot
    read, it says nothing and `TrackingStore.experiment_id` decides.

    Raises:
        TrackingError: If the store has no active experiment `name` (the same message as
            `experiment_id`).
    """
    if has_experiment(uri, name) is False:
        raise ExperimentNotFound(f"no experiment {name!r} at {resolve_tracking_uri(uri)}")


def has_experiment(uri: str | None, name: str) -> bool | None:
    """Whether a local SQLite store has an active experiment `name`, read without MLflow
    (read-only, from MLflow's table of experiments); a missing or empty database has none.
    `None` for any other store, or a database this cannot read."""
    path = sqlite_path(resolve_tracking_uri(uri))
    if path is None:
        return None
    if is_new(path):
        return False
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        ) as db:
            found = db.execute(
                "SELECT 1 FROM experiments WHERE name = ? AND lifecycle_stage = 'active'",
                (name,),
            ).fetchone()
    except sqlite3.Error:
        return None  # not a layout this knows: let MLflow answer
    return found is not None


def experiment_is_new(uri: str | None, name: str) -> bool:
    """Whether the store surely holds no experiment `name` yet, known without MLflow: a local
    SQLite store without it, or an MLflow server that says so over REST. Only a guess that
    saves time (generating while MLflow opens): `False` whenever it cannot tell."""
    resolved = resolve_tracking_uri(uri)
    if urlparse(resolved).scheme in ("http", "https"):
        return server_has_experiment(resolved, name) is False
    return has_experiment(resolved, name) is False


def open_in_background(uri: str | None) -> Future[TrackingStore]:
    """Open the store in a background thread.

    MLflow takes seconds to import and set up: a phase can check its input, or generate,
    meanwhile. The thread is a daemon, so an error or Ctrl-C elsewhere never waits for it.
    """
    opening: Future[TrackingStore] = Future()

    def work() -> None:
        try:
            store = TrackingStore(uri)
            _ = store.client  # import and set up MLflow now, off the caller's path
            opening.set_result(store)
        except BaseException as exc:  # handed to whoever waits for the store
            opening.set_exception(exc)

    threading.Thread(target=work, name="tipbench-store-opening", daemon=True).start()
    return opening


class TrackingStore:
    """A thin, typed face over `MlflowClient` for the calls tipbench makes.

    Reads of a local SQLite store (experiments, runs found by tag and param values) go
    straight to its tables (`_sql_reader`); MLflow is imported on first need: any write,
    any other store, or a database that reader cannot read.
    """

    def __init__(self, uri: str | None = None) -> None:
        for key, value in _MLFLOW_DEFAULTS.items():
            os.environ.setdefault(key, value)
        self.uri = resolve_tracking_uri(uri)
        self.shown_uri = redact_uri(self.uri)  # the URI for messages: no credentials
        self._reader = open_reader(self.uri)

    @functools.cached_property
    def client(self) -> MlflowClient:
        from mlflow import MlflowClient

        self._seed()
        return MlflowClient(tracking_uri=self.uri)

    def _seed(self) -> None:
        """A new local SQLite database: copy the template into it (`_new_store`)."""
        path = sqlite_path(self.uri)
        if path is None or not is_new(path):
            return
        default = _artifact_root(path) / "0"
        with contextlib.suppress(OSError, sqlite3.Error):  # then MLflow builds it, as ever
            templates = private_dir(private_dir(data_dir()) / TEMPLATES_DIR)
            seed_new_store(path, templates, default.as_uri())
        self._reader = open_reader(self.uri)

    def find_experiment(self, name: str) -> str | None:
        """The id of the active experiment `name`, or None if the store has none."""
        if self._reader is not None:
            with contextlib.suppress(NotReadable):
                return self._reader.experiment_id(name)
        try:
            experiment = self.client.get_experiment_by_name(name)
        except Exception as exc:
            raise TrackingError(
                f"cannot use the MLflow store at {self.shown_uri}: {short_error(exc)}"
            ) from None
        return None if experiment is None else str(experiment.experiment_id)

    def experiment_id(self, name: str, create: bool = False) -> str:
        """The id of experiment `name`, created if asked (raises TrackingError otherwise)."""
        found = self.find_experiment(name)
        if found is not None:
            return found
        if not create:
            raise ExperimentNotFound(f"no experiment {name!r} at {self.shown_uri}")
        database = sqlite_path(self.uri)
        location = (_artifact_root(database) / name).as_uri() if database else None
        try:
            try:
                return str(self.client.create_experiment(name, artifact_location=location))
            except Exception:
                # Another process may have created it a moment ago (two collects at once).
                experiment = self.client.get_experiment_by_name(name)
                if experiment is None:
                    raise
                return str(experiment.experiment_id)
        except Exception as exc:
            raise TrackingError(
                f"cannot use the MLflow store at {self.shown_uri}: {short_error(exc)}"
            ) from None

    def search(self, experiment_id: str, filter_string: str = "") -> Iterator[Run]:
        """Every active run of the experiment that matches the filter, page by page."""
        token: str | None = None
        while True:
            try:
                page = self.client.search_runs(
                    [experiment_id], filter_string, max_results=_PAGE_SIZE, page_token=token
                )
            except Exception as exc:
                raise TrackingError(
                    f"cannot search runs at {self.shown_uri}: {short_error(exc)}"
                ) from None
            yield from page
            token = page.token
            if not token:
                return

    def find(
        self,
        experiment_id: str,
        tags: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        *,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[StoredRun]:
        """The experiment's active runs with these tag and param values (and MLflow status),
        newest first."""
        params = params or {}
        if self._reader is not None:
            with contextlib.suppress(NotReadable):
                return self._reader.runs(experiment_id, tags, params, status, limit)
        clauses = [f"tags.`{k}` = {_literal(v)}" for k, v in tags.items()]
        clauses += [f"params.`{k}` = {_literal(v)}" for k, v in params.items()]
        if status is not None:
            clauses.append(f"attributes.status = {_literal(status)}")
        found = []
        for run in self.search(experiment_id, " AND ".join(clauses)):
            found.append(
                StoredRun(
                    run.info.run_id,
                    run.info.run_name or "",
                    run.info.status,
                    run.info.start_time or 0,
                    run.data.params,
                    run.data.tags,
                    run.data.metrics,
                )
            )
            if limit is not None and len(found) >= limit:
                break
        return found

    def cell_runs(
        self,
        experiment_id: str,
        *,
        judgeable: bool = False,
        pending: bool = False,
        prompt_version: str | None = None,
    ) -> list[CellRun]:
        """The experiment's cell runs: all, the judgeable ones, or those pending a human.

        Args:
            experiment_id: The experiment.
            judgeable: Only finished runs with candidates (`tracking._layout.RUN_FINISHED`).
            pending: Only judgeable runs the human judge has not scored yet.
            prompt_version: Only runs of this prompt version.
        """
        if prompt_version is not None and "'" in prompt_version:
            raise ValueError(f"a prompt version cannot hold a quote: {prompt_version!r}")
        tags, params = cell_selection(
            judgeable=judgeable, pending=pending, prompt_version=prompt_version
        )
        status = cell_run_status(judgeable=judgeable, pending=pending)
        return [CellRun.of(run) for run in self.find(experiment_id, tags, params, status=status)]

    def open_parent(
        self,
        experiment_id: str,
        kind: str,
        key: str,
        name: str,
        params: dict[str, str],
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Reopen the parent run of `kind` tagged `key` (a resumed collection), or create it;
        `tags` (e.g. which orchestrator task and try runs it) are set either way."""
        from mlflow.entities import Param, RunTag

        extra = dict(tags or {})
        try:
            found = self.search(
                experiment_id, f"tags.`{KIND_TAG}` = '{kind}' AND tags.parent_key = '{key}'"
            )
            for run in found:
                self.client.update_run(run.info.run_id, status="RUNNING")
                if extra:
                    self.client.log_batch(
                        run.info.run_id, tags=[RunTag(k, v) for k, v in extra.items()]
                    )
                return str(run.info.run_id)
            run = self.client.create_run(
                experiment_id, run_name=name, tags={**extra, KIND_TAG: kind, "parent_key": key}
            )
            self.client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in params.items()])
            return str(run.info.run_id)
        except TrackingError:
            raise
        except Exception as exc:
            raise TrackingError(
                f"cannot create a run at {self.shown_uri}: {short_error(exc)}"
            ) from None

    def log_file(self, experiment_id: str, kind: str, path: Path, folder: str) -> str:
        """Record `path` as the artifact `folder/NAME` of a new finished run of `kind`
        (e.g. a judge file, so that every machine reaches it); returns its `runs:/` URI.

        Raises:
            TrackingError: the store refused the run or the artifact.
        """
        try:
            run = self.client.create_run(
                experiment_id, run_name=f"{kind} {path.name}", tags={KIND_TAG: kind}
            )
            self.client.log_artifact(run.info.run_id, str(path), folder)
            self.client.set_terminated(run.info.run_id, "FINISHED")
        except Exception as exc:
            raise TrackingError(
                f"cannot record {path.name} at {self.shown_uri}: {short_error(exc)}"
            ) from None
        return f"runs:/{run.info.run_id}/{folder}/{path.name}"

    def fetch_file(self, artifact_uri: str, folder: Path) -> Path:
        """Download the artifact `artifact_uri` (`runs:/…`, `mlflow-artifacts:/…`) of this
        store into `folder`; returns the local file.

        Raises:
            TrackingError: no such artifact, or the store cannot be reached.
        """
        import mlflow.artifacts

        try:
            local = mlflow.artifacts.download_artifacts(
                artifact_uri=artifact_uri, dst_path=str(folder), tracking_uri=self.uri
            )
        except Exception as exc:
            raise TrackingError(f"cannot fetch {artifact_uri}: {short_error(exc)}") from None
        return Path(local)

    def close_parent(self, run_id: str, status: str, metrics: dict[str, float]) -> None:
        """End a parent run with its summary metrics (best effort: never raises)."""
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        with contextlib.suppress(Exception):
            self.client.log_batch(
                run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()]
            )
            self.client.set_terminated(run_id, status=status, end_time=now)


def _literal(value: str) -> str:
    """`value` as a string of an MLflow filter (which has no escapes: a value holding both
    kinds of quotes cannot be searched for)."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise TrackingError(f"cannot search MLflow for a value with both kinds of quotes: {value}")


def short_error(exc: BaseException) -> str:
    """The first line of an exception, for one-line messages (URIs in it redacted)."""
    text = redact_text(str(exc).strip())
    if "Max retries exceeded" in text or "Connection refused" in text:
        return "connection refused"
    lines = text.splitlines()
    return lines[0][:300] if lines else type(exc).__name__
