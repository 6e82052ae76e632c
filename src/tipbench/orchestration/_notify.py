"""Telling Airflow that human scores were applied: an event of the `tipbench_judged` asset.

`bench_judged` is scheduled on that asset, so each event recomputes the experiment's
leaderboard and runs the promotion gate. Posting is best effort: a failure is a warning
for the caller to show, never a failed apply.
"""

from __future__ import annotations

from tipbench._errors import TipbenchError
from tipbench._redact import has_credentials
from tipbench.orchestration._conf import JUDGED_ASSET_NAME
from tipbench.orchestration._rest import AirflowClient, AirflowSettings


def announce_judged(experiment: str, tracking_uri: str | None = None) -> str | None:
    """Post a `tipbench_judged` event naming `experiment` (and its store) when Airflow is
    configured (`TIPBENCH_AIRFLOW_URL`).

    Returns:
        None when the event was posted or Airflow is not configured; otherwise a one-line
        warning saying why Airflow was not told.
    """
    try:
        settings = AirflowSettings.from_env()
        if settings is None:
            return None
        extra: dict[str, str] = {"experiment": experiment}
        if tracking_uri and not has_credentials(tracking_uri):
            extra["mlflow_url"] = tracking_uri
        client = AirflowClient(settings)
        try:
            client.post_asset_event(JUDGED_ASSET_NAME, extra)
        finally:
            client.close()
    except TipbenchError as exc:
        return f"Airflow was not told about the new scores: {exc}"
    return None
