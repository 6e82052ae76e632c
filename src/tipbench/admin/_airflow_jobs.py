"""Jobs that run on Airflow: with `TIPBENCH_AIRFLOW_URL` set, `POST /api/bench/run` triggers
`bench_collect` through Airflow's REST API v2 instead of starting a subprocess.

The job's row records the DAG run id and its page in Airflow's UI. A thread polls Airflow
for every running job: its state (`success` → succeeded, `failed` → failed) and progress
(mapped collect tasks done / total, the task running now as the phase, and cells and
candidates done from the progress events in the collect and judge tasks' logs), and appends
what changed to the job's log. Cancel marks the DAG run failed: Airflow answers that the run
is still `running` and stops its tasks within seconds, so the job stays `running` in phase
`cancelling` until Airflow reports the run ended, and is `cancelled` then; resume triggers a
new DAG run with the same conf, which resumes by cell key. Airflow that cannot be reached
fails `submit` before any job exists; the server restarting does not interrupt these jobs
(Airflow runs them), the thread picks them up again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tipbench._progress_events import ProgressEventError, StepDone, TotalKnown, read_event
from tipbench._redact import has_credentials
from tipbench.admin._job_log import read_log
from tipbench.admin._jobs import RESUMABLE, Job, JobConflict, JobState, JobStore, Progress, now
from tipbench.orchestration import BENCH_COLLECT, AirflowClient, AirflowError, TaskInstance
from tipbench.pipeline import RunRequest

logger = logging.getLogger(__name__)

_DONE_TASK_STATES = frozenset({"success", "skipped"})
_FINISHED_TASK_STATES = frozenset({"success", "failed", "skipped", "upstream_failed"})
_NOT_STARTED = frozenset({None, "scheduled", "queued", "none", "removed"})
_COUNTING = frozenset({"collect", "judge_auto"})  # the tasks that count cells and candidates
Counts = tuple[int, int]  # steps done, steps in all
_FINAL: dict[str, JobState] = {"success": "succeeded", "failed": "failed"}
#: The phase of a job whose DAG run was marked failed and has not ended yet.
CANCELLING = "cancelling"
_CANCEL_POLL_S = 1.0


class AirflowJobRunner:
    """The job runner of a server configured with Airflow; same face as `JobRunner`."""

    def __init__(
        self,
        store: JobStore,
        client: AirflowClient,
        *,
        tracking_uri: str,
        poll_s: float = 5.0,
    ) -> None:
        self.store = store
        self.client = client
        self.tracking_uri = tracking_uri
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # the counts of task tries that have finished: their logs do not change any more
        self._final_counts: dict[tuple[str, str, int, int], dict[str, Counts]] = {}
        self._updating = threading.Lock()  # the poller and a cancel change one job in turn

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tipbench-airflow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.client.close()

    def conf(self, request: RunRequest) -> dict[str, Any]:
        """`bench_collect`'s conf for a run request: the server's store unless it names one."""
        conf = request.model_dump(mode="json")
        for key, value in conf.items():  # lists are comma-separated, as the DAG's Params say
            if isinstance(value, list):
                conf[key] = ",".join(value)
        uri = request.mlflow_url or self.tracking_uri
        conf["mlflow_url"] = None if has_credentials(uri) else uri  # else: the workers' own
        return conf

    def submit(self, request: RunRequest) -> Job:
        """Trigger `bench_collect`; the job exists only once Airflow has accepted the run.

        Raises:
            AirflowError: Airflow refused the run or cannot be reached (nothing queued).
        """
        run_id = self.client.trigger(BENCH_COLLECT, self.conf(request))
        url = self.client.run_url(BENCH_COLLECT, run_id)
        job = self.store.create(request, dag_run_id=run_id, remote_url=url)
        _append(job.log_path, f"--- {now()} triggered {BENCH_COLLECT} run {run_id}: {url}")
        return job

    def resume(self, job_id: str) -> Job:
        """A new DAG run with the same conf (it resumes by cell key).

        Raises:
            JobConflict: if the job is not failed, cancelled or interrupted.
            AirflowError: Airflow refused the run or cannot be reached.
        """
        job = self.store.get(job_id)
        if job.state not in RESUMABLE:
            raise JobConflict(
                f"job {job_id} is {job.state}: only a failed, cancelled or interrupted job resumes"
            )
        run_id = self.client.trigger(
            BENCH_COLLECT, self.conf(RunRequest.model_validate(job.config))
        )
        url = self.client.run_url(BENCH_COLLECT, run_id)
        if not self.store.restart_remote(job_id, run_id, url):
            raise JobConflict(f"job {job_id} changed meanwhile")
        _append(job.log_path, f"--- {now()} resumed as {BENCH_COLLECT} run {run_id}: {url}")
        return self.store.get(job_id)

    def cancel(self, job_id: str, wait_s: float = 0.0) -> Job:
        """Mark the job's DAG run failed in Airflow; the job is `cancelled` once Airflow
        reports the run ended (waits up to `wait_s` for it), `running` in phase
        `cancelling` until then.

        Raises:
            JobConflict: if the job has already finished, or is being cancelled.
            AirflowError: Airflow cannot be reached (the job keeps running).
        """
        with self._updating:
            job = self.store.get(job_id)
            if job.state != "running" or job.dag_run_id is None:
                raise JobConflict(f"job {job_id} is {job.state}: nothing to cancel")
            if job.progress.phase == CANCELLING:
                raise JobConflict(
                    f"job {job_id} is cancelling already: Airflow is stopping its run"
                )
            self.client.fail_run(BENCH_COLLECT, job.dag_run_id)
            self.store.set_progress(job_id, replace(job.progress, phase=CANCELLING))
        _append(
            job.log_path,
            f"--- {now()} cancel: {BENCH_COLLECT} run marked failed, "
            "waiting for Airflow to stop its tasks",
        )
        deadline = time.monotonic() + wait_s
        while (job := self.refresh(self.store.get(job_id))).state == "running":
            if time.monotonic() >= deadline:
                break
            time.sleep(_CANCEL_POLL_S)
        return job

    def log(self, job_id: str, tail: int | None = None) -> str:
        return read_log(self.store.get(job_id).log_path, tail)

    def refresh(self, job: Job) -> Job:
        """Bring a running job's state and progress up to date from Airflow (a job being
        cancelled stays in phase `cancelling`, and is `cancelled` once its run failed)."""
        with self._updating:
            return self._refresh(self.store.get(job.id))

    def _refresh(self, job: Job) -> Job:
        if job.state != "running" or job.dag_run_id is None:
            return job
        state = self.client.run_state(BENCH_COLLECT, job.dag_run_id)
        tasks = self.client.task_instances(BENCH_COLLECT, job.dag_run_id)
        progress = progress_of(tasks, job.progress, self._counts(job.dag_run_id, tasks))
        cancelling = job.progress.phase == CANCELLING
        if cancelling:
            progress = replace(progress, phase=CANCELLING)
        if progress != job.progress:
            self.store.set_progress(job.id, progress)
            _append(job.log_path, f"{now()} {describe(tasks)}")
        if state in _FINAL:
            final = "cancelled" if cancelling and state == "failed" else _FINAL[state]
            error = failure_of(tasks) if final == "failed" else None
            if state == "success":
                self._announce_judge_file(job)
            self.store.finish(job.id, final, exit_code=None, error=error)
            ended = "ended: cancelled" if final == "cancelled" else state
            _append(job.log_path, f"--- {now()} {BENCH_COLLECT} run {ended}")
        return self.store.get(job.id)

    def _announce_judge_file(self, job: Job) -> None:
        """Log where the judge file is: export_for_judge's XCom, an MLflow artifact URI
        that the CLI and every machine reach (best effort)."""
        assert job.dag_run_id is not None
        try:
            uri = self.client.xcom(BENCH_COLLECT, job.dag_run_id, "export_for_judge")
        except AirflowError as exc:
            logger.debug("job %s: no judge file URI: %s", job.id, exc)
            return
        if isinstance(uri, str) and uri:
            experiment = job.config.get("experiment", "")
            _append(
                job.log_path,
                f"{now()} judge file: {uri} (tipbench judge apply --experiment {experiment} {uri})",
            )

    def _counts(self, run_id: str, tasks: list[TaskInstance]) -> dict[str, Counts]:
        """Per unit (cells, candidates): steps done and in all, summed over the tasks'
        logs; a task whose log cannot be read now counts as nothing yet."""
        summed: dict[str, Counts] = {}
        for task in tasks:
            if task.task_id not in _COUNTING or task.state in _NOT_STARTED:
                continue
            key = (run_id, task.task_id, task.map_index, task.try_number)
            counts = self._final_counts.get(key)
            if counts is None:
                try:
                    counts = counts_in(self.client.task_log(BENCH_COLLECT, run_id, task))
                except AirflowError as exc:
                    logger.debug("log of %s: %s", task.task_id, exc)
                    continue
                if task.state in _FINISHED_TASK_STATES:
                    self._final_counts[key] = counts
            for unit, (done, total) in counts.items():
                before = summed.get(unit, (0, 0))
                summed[unit] = (before[0] + done, before[1] + total)
        return summed

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            for job in self.store.remote_running():
                try:
                    self.refresh(job)
                except AirflowError as exc:  # unreachable for now: try again next round
                    logger.warning("job %s: %s", job.id, exc)
                except Exception:  # the poller survives whatever one job does
                    logger.exception("job %s: cannot refresh from Airflow", job.id)


def progress_of(
    tasks: list[TaskInstance], before: Progress, counts: dict[str, Counts] | None = None
) -> Progress:
    """Mapped collect tasks done / total, the task(s) running now as the phase, and the
    cells and candidates done (`counts`, from the tasks' progress events)."""
    collect = [t for t in tasks if t.task_id == "collect" and t.map_index >= 0]
    running = sorted({t.task_id for t in tasks if t.state in ("running", "queued")})
    counts = counts or {}
    cells_done, cells_total = counts.get("cells", (before.cells_done, before.cells_total))
    judged, judge_total = counts.get("candidates", (before.judged, before.judge_total))
    return Progress(
        phase=",".join(running) or before.phase,
        cells_done=max(cells_done, before.cells_done),
        cells_total=max(cells_total, before.cells_total),
        judged=max(judged, before.judged),
        judge_total=max(judge_total, before.judge_total),
        models_done=sum(t.state in _DONE_TASK_STATES for t in collect),
        models_total=len(collect) or before.models_total,
    )


def counts_in(messages: list[str]) -> dict[str, Counts]:
    """The last (done, total) per unit among the progress events of a task's log."""
    counts: dict[str, Counts] = {}
    for message in messages:
        start = message.find('{"v":')
        if start < 0:
            continue
        try:
            event = read_event(message[start:].strip())
        except ProgressEventError:
            continue
        if isinstance(event, TotalKnown | StepDone):
            counts[event.unit] = (event.done, event.total)
    return counts


def describe(tasks: list[TaskInstance]) -> str:
    """One line of task states, mapped tasks by model, e.g. `plan success,
    collect[ollama:qwen2.5:0.5b] running, collect[1] -` (a task not started has no name)."""
    parts = []
    for t in sorted(tasks, key=lambda t: (_ORDER.get(t.task_id, 9), t.map_index)):
        name = t.task_id if t.map_index < 0 else f"{t.task_id}[{t.label or t.map_index}]"
        parts.append(f"{name} {t.state or '-'}")
    return ", ".join(parts)


def failure_of(tasks: list[TaskInstance]) -> str:
    failed = [t.task_id for t in tasks if t.state == "failed"]
    where = f" at task {failed[0]}" if failed else ""
    return f"the Airflow run failed{where}: see its task log in Airflow"


_ORDER = {
    "plan": 0,
    "collect": 1,
    "judge_auto": 2,
    "export_for_judge": 3,
    "compare": 4,
    "outcome": 5,
}


def _append(path: Path, line: str) -> None:
    with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as log:
        log.write(line + "\n")
