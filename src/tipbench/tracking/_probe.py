"""Ask an MLflow tracking server one question over its REST API, without importing MLflow
(which takes seconds): whether it has an experiment.

Only the plain ways to reach a server are tried: credentials in the URI, or MLflow's
`MLFLOW_TRACKING_TOKEN` / `MLFLOW_TRACKING_USERNAME` and `MLFLOW_TRACKING_PASSWORD`. Any
other set-up (TLS options, auth plugins, workspaces) or any unexpected answer gives `None`:
MLflow itself decides then.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from urllib.parse import quote, urlsplit, urlunsplit

# Settings under which a plain request may not reach the server as MLflow would.
_UNSUPPORTED = (
    "MLFLOW_TRACKING_AUTH",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_TRACKING_SERVER_CERT_PATH",
    "MLFLOW_TRACKING_CLIENT_CERT_PATH",
    "MLFLOW_WORKSPACE",
)
_TIMEOUT_S = 3.0


def server_has_experiment(uri: str, name: str) -> bool | None:
    """Whether the MLflow server at `uri` (http or https) has an active experiment `name`;
    `None` when this cannot tell."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or any(os.environ.get(k) for k in _UNSUPPORTED):
        return None
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit(
        (
            parts.scheme,
            host,
            f"{parts.path.rstrip('/')}/api/2.0/mlflow/experiments/get-by-name",
            f"experiment_name={quote(name)}",
            "",
        )
    )
    request = urllib.request.Request(url, headers=_auth_headers(parts.username, parts.password))
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            found = json.load(response)
    except urllib.error.HTTPError as exc:
        try:
            error = json.load(exc)
        except ValueError:
            return None
        finally:
            exc.close()
        return False if error.get("error_code") == "RESOURCE_DOES_NOT_EXIST" else None
    except (OSError, ValueError):
        return None
    stage = found.get("experiment", {}).get("lifecycle_stage")
    return True if stage == "active" else None


def _auth_headers(user: str | None, password: str | None) -> dict[str, str]:
    """The Authorization header MLflow's client would send (URI credentials first)."""
    if token := os.environ.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {token}"}
    user = user or os.environ.get("MLFLOW_TRACKING_USERNAME")
    password = password or os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if not user:
        return {}
    basic = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
    return {"Authorization": f"Basic {basic}"}
