"""A small client of Airflow's REST API v2: trigger and watch DAG runs, post asset events.

Configured from the environment: `TIPBENCH_AIRFLOW_URL` (the API server, e.g.
`http://airflow:8080`) and credentials for `/auth/token`: `TIPBENCH_AIRFLOW_USERNAME`
(default `admin`) with `TIPBENCH_AIRFLOW_PASSWORD` or `TIPBENCH_AIRFLOW_PASSWORD_FILE`.
Credentials and tokens never appear in errors, logs or reprs.

    AirflowError            the API refused a request (4xx), names the call and status
    └── AirflowUnavailable  the API cannot be reached, timed out or failed (5xx)
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from pydantic import SecretStr

from tipbench._errors import ConfigError, TipbenchError

URL_VARIABLE = "TIPBENCH_AIRFLOW_URL"
_TIMEOUT = httpx.Timeout(30.0, connect=5.0)  # a busy API server answers slowly


class AirflowError(TipbenchError):
    """Airflow's API refused a request."""


class AirflowUnavailable(AirflowError):
    """Airflow's API cannot be reached, timed out or failed."""


@dataclass(frozen=True)
class TaskInstance:
    """One task instance of a DAG run (mapped tasks have one per map index)."""

    task_id: str
    map_index: int
    state: str | None
    try_number: int = 0
    id: str = ""
    label: str | None = None  # a mapped task's name (its `map_index_template`)
    hostname: str | None = None  # the worker it ran on


@dataclass(frozen=True)
class AirflowSettings:
    """Where Airflow's API is and how to log in to it."""

    url: str
    username: str
    password: SecretStr = field(repr=False)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> AirflowSettings | None:
        """The settings from the environment, or None when `TIPBENCH_AIRFLOW_URL` is unset.

        Raises:
            ConfigError: a bad URL, or a URL without credentials.
        """
        env = dict(os.environ) if env is None else env
        url = env.get(URL_VARIABLE, "").strip().rstrip("/")
        if not url:
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{URL_VARIABLE}: expected an http(s) URL")
        if parts.username or parts.password:
            raise ConfigError(
                f"{URL_VARIABLE}: no credentials in the URL; set TIPBENCH_AIRFLOW_USERNAME "
                "and TIPBENCH_AIRFLOW_PASSWORD (or TIPBENCH_AIRFLOW_PASSWORD_FILE)"
            )
        password = env.get("TIPBENCH_AIRFLOW_PASSWORD", "")
        if not password and (path := env.get("TIPBENCH_AIRFLOW_PASSWORD_FILE")):
            try:
                password = Path(path).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(f"TIPBENCH_AIRFLOW_PASSWORD_FILE: {exc.strerror}") from None
        if not password:
            raise ConfigError(
                f"{URL_VARIABLE} is set but no password: set TIPBENCH_AIRFLOW_PASSWORD "
                "or TIPBENCH_AIRFLOW_PASSWORD_FILE"
            )
        username = env.get("TIPBENCH_AIRFLOW_USERNAME", "admin")
        return cls(url, username, SecretStr(password))


class AirflowClient:
    """Calls Airflow's REST API v2 with a bearer token from `/auth/token` (renewed on 401)."""

    def __init__(self, settings: AirflowSettings, timeout: httpx.Timeout = _TIMEOUT) -> None:
        self.settings = settings
        self._http = httpx.Client(base_url=settings.url, timeout=timeout)
        self._token: str | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    def run_url(self, dag_id: str, run_id: str) -> str:
        """The run's page in Airflow's UI."""
        return f"{self.settings.url}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        """Start a run of `dag_id` with `conf`; returns its run id."""
        body = {"logical_date": None, "conf": conf}
        data = self._call("POST", f"/api/v2/dags/{quote(dag_id)}/dagRuns", json=body)
        return str(data["dag_run_id"])

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        """The run as Airflow describes it (`state`, `queued_at`, `start_date`, `end_date`…)."""
        return self._call("GET", self._run_path(dag_id, run_id))

    def run_state(self, dag_id: str, run_id: str) -> str:
        """`queued`, `running`, `success` or `failed`."""
        return str(self._call("GET", self._run_path(dag_id, run_id))["state"])

    def task_instances(self, dag_id: str, run_id: str) -> list[TaskInstance]:
        """Every task instance of the run, mapped ones with their map index."""
        data = self._call("GET", f"{self._run_path(dag_id, run_id)}/taskInstances")
        return [
            TaskInstance(
                str(ti["task_id"]),
                int(ti.get("map_index", -1)),
                ti.get("state"),
                int(ti.get("try_number") or 0),
                str(ti.get("id", "")),
                ti.get("rendered_map_index") or None,
                ti.get("hostname") or None,
            )
            for ti in data["task_instances"]
        ]

    def xcom(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Any:
        """The return value of a task instance (its `return_value` XCom)."""
        path = f"{self._run_path(dag_id, run_id)}/taskInstances/{quote(task_id)}"
        data = self._call(
            "GET",
            f"{path}/xcomEntries/return_value",
            params={"map_index": map_index, "deserialize": "true"},
        )
        return data.get("value")

    def task_log(self, dag_id: str, run_id: str, task: TaskInstance) -> list[str]:
        """The messages of the task instance's log (its latest try), oldest first."""
        path = f"{self._run_path(dag_id, run_id)}/taskInstances/{quote(task.task_id)}/logs"
        data = self._call(
            "GET",
            f"{path}/{max(task.try_number, 1)}",
            params={"map_index": task.map_index, "full_content": "true"},
            headers={"Accept": "application/json"},
        )
        return [
            str(line.get("event", "")) if isinstance(line, dict) else str(line)
            for line in data.get("content", [])
        ]

    def dag_runs(self, dag_id: str) -> list[tuple[str, str]]:
        """The runs of `dag_id` as (run id, state), newest first."""
        data = self._call(
            "GET", f"/api/v2/dags/{quote(dag_id)}/dagRuns", params={"order_by": "-run_after"}
        )
        return [(str(run["dag_run_id"]), str(run["state"])) for run in data["dag_runs"]]

    def hitl_details(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        """The run's human-in-the-loop requests (approvals), answered or waiting."""
        data = self._call("GET", f"{self._run_path(dag_id, run_id)}/hitlDetails")
        return list(data.get("hitl_details", []))

    def answer_hitl(
        self, dag_id: str, run_id: str, task_id: str, options: list[str], map_index: int = -1
    ) -> None:
        """Answer a waiting human-in-the-loop request with the chosen `options`."""
        path = f"{self._run_path(dag_id, run_id)}/taskInstances/{quote(task_id)}/{map_index}"
        self._call("PATCH", f"{path}/hitlDetails", json={"chosen_options": options})

    def set_paused(self, dag_id: str, paused: bool) -> None:
        """Pause or unpause `dag_id` (new DAGs start paused: their runs wait and asset events
        are ignored until they are unpaused)."""
        self._call("PATCH", f"/api/v2/dags/{quote(dag_id)}", json={"is_paused": paused})

    def is_paused(self, dag_id: str) -> bool:
        return bool(self._call("GET", f"/api/v2/dags/{quote(dag_id)}")["is_paused"])

    def fail_run(self, dag_id: str, run_id: str) -> None:
        """Mark the run failed: Airflow stops its running tasks and schedules no more."""
        self._call("PATCH", self._run_path(dag_id, run_id), json={"state": "failed"})

    def post_asset_event(self, asset_name: str, extra: dict[str, Any]) -> None:
        """Record an event of the asset named `asset_name` (DAGs scheduled on it run)."""
        found = self._call("GET", "/api/v2/assets", params={"name_pattern": asset_name})
        ids = [a["id"] for a in found.get("assets", []) if a.get("name") == asset_name]
        if not ids:
            raise AirflowError(
                f"Airflow knows no asset {asset_name!r} (are tipbench's DAGs installed?)"
            )
        self._call("POST", "/api/v2/assets/events", json={"asset_id": ids[0], "extra": extra})

    @staticmethod
    def _run_path(dag_id: str, run_id: str) -> str:
        return f"/api/v2/dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}"

    def _login(self) -> str:
        body = {
            "username": self.settings.username,
            "password": self.settings.password.get_secret_value(),
        }
        response = self._send("POST", "/auth/token", json=body)
        if response.status_code in (401, 403):
            raise AirflowError("Airflow refused tipbench's credentials (POST /auth/token)")
        token = self._checked(response, "POST /auth/token").get("access_token")
        if not isinstance(token, str):
            raise AirflowError("Airflow's /auth/token answered without an access token")
        return token

    def _call(
        self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        for attempt in (1, 2):
            with self._lock:
                if self._token is None:
                    self._token = self._login()
                token = self._token
            response = self._send(
                method,
                path,
                headers={**(headers or {}), "Authorization": f"Bearer {token}"},
                **kwargs,
            )
            if response.status_code == 401 and attempt == 1:  # expired: log in again once
                with self._lock:
                    self._token = None
                continue
            return self._checked(response, f"{method} {path.split('?')[0]}")
        raise AssertionError("unreachable")

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise AirflowUnavailable(f"Airflow at {self.settings.url} timed out") from None
        except httpx.HTTPError as exc:
            reason = type(exc).__name__
            raise AirflowUnavailable(
                f"Airflow at {self.settings.url} cannot be reached ({reason})"
            ) from None

    def _checked(self, response: httpx.Response, call: str) -> dict[str, Any]:
        if response.status_code >= 500:
            raise AirflowUnavailable(f"Airflow failed {call}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise AirflowError(
                f"Airflow refused {call}: HTTP {response.status_code}{_detail(response)}"
            )
        data = response.json() if response.content else {}
        return data if isinstance(data, dict) else {"items": data}


def _detail(response: httpx.Response) -> str:
    """Airflow's own short reason (its `detail`), without echoing request bodies."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return ""
    if isinstance(detail, str):
        return f": {detail[:200]}"
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        where = ".".join(str(p) for p in first.get("loc", []))
        return f": {where}: {str(first.get('msg', ''))[:200]}"
    return ""
