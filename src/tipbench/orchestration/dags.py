"""tipbench's Airflow DAGs: `bench_collect` and `bench_judged` (SPEC §7).

Enable them with a two-line shim in the dags folder (`tipbench airflow install-dags DIR`).
This module is cheap to parse: it imports Airflow's SDK and tipbench's conf model only;
every task imports the library it calls when it runs.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, Param, dag, get_current_context, task

from tipbench.orchestration._conf import (
    BENCH_COLLECT,
    BENCH_JUDGED,
    JUDGED_ASSET_NAME,
    JUDGED_ASSET_URI,
    MAX_PARALLEL_MODELS,
    param_specs,
)

#: The asset whose events say "human scores were applied to an experiment".
JUDGED_ASSET = Asset(name=JUDGED_ASSET_NAME, uri=JUDGED_ASSET_URI)
#: How long a collect task that must wait for a free model slot stays rescheduled.
SLOT_WAIT = timedelta(seconds=float(os.environ.get("TIPBENCH_AIRFLOW_SLOT_WAIT_S", "10")))
_FINISHED = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
_COLLECT_DOC = """`plan` (validates the conf, runs the size guard, creates the experiment) →
`collect`, one mapped task per model (at most `parallel_models` at once, in the pool
`$TIPBENCH_AIRFLOW_POOL` when set) → `judge_auto` → `export_for_judge` (XCom: the judge
file's path) → `compare` (XCom: the leaderboard run id). Every task resumes when retried."""
_JUDGED_DOC = """Runs on every event of the `tipbench_judged` asset (posted by tipbench after human
scores are applied; its `extra` names the experiment), or by hand with
`{"experiment": "tip-bench-…", "apply": false}`: recomputes the leaderboard, then runs the
promotion gate and records its decision (a dry run unless the event or conf says apply)."""

_retrying = {"retries": 2, "retry_delay": timedelta(seconds=15)}


@dag(
    dag_id=BENCH_COLLECT,
    schedule=None,
    catchup=False,
    params={name: Param(**spec) for name, spec in param_specs().items()},
    default_args=_retrying,
    tags=["tipbench"],
    doc_md=_COLLECT_DOC,
)
def _bench_collect() -> None:
    @task(retries=0)
    def plan() -> list[dict[str, Any]]:
        """Bad conf, unknown models or too-large models fail here, before anything is written.

        Returns one work order per model: the validated conf, the model, the store.
        """
        from tipbench.orchestration._phases import plan as plan_run

        context = get_current_context()
        dag_run = context["dag_run"]
        conf = dict(dag_run.conf or {}) if dag_run is not None else {}
        return plan_run({**dict(context["params"]), **conf})

    @task(
        max_active_tis_per_dagrun=MAX_PARALLEL_MODELS,
        pool=os.environ.get("TIPBENCH_AIRFLOW_POOL") or "default_pool",
    )
    def collect(order: dict[str, Any]) -> dict[str, Any]:
        """One model's block of the grid; a retry resumes by cell key."""
        from tipbench.orchestration._phases import collect_model

        _wait_for_model_slot(int(order["conf"]["parallel_models"]))
        return collect_model(order["conf"], order["model"], order["tracking_uri"])

    @task
    def judge_auto(orders: list[dict[str, Any]]) -> dict[str, Any]:
        from tipbench.orchestration._phases import judge_auto as judge

        return judge(orders[0]["conf"], orders[0]["tracking_uri"])

    @task
    def export_for_judge(orders: list[dict[str, Any]]) -> str:
        from tipbench.orchestration._phases import export_for_judge as export

        return export(orders[0]["conf"], orders[0]["tracking_uri"])

    @task
    def compare(orders: list[dict[str, Any]]) -> str | None:
        from tipbench.orchestration._phases import compare as rank

        return rank(str(orders[0]["conf"]["experiment"]), orders[0]["tracking_uri"])

    orders: Any = plan()  # one work order per model
    collected = collect.expand(order=orders)
    collected >> judge_auto(orders) >> export_for_judge(orders) >> compare(orders)


def _wait_for_model_slot(parallel_models: int) -> None:
    """Hold this mapped collect task back while `parallel_models` earlier ones are unfinished.

    The task is rescheduled (its worker slot freed) until fewer than `parallel_models`
    collect tasks with a lower map index are unfinished; so at most that many models are
    resident at once, and the lowest unfinished one can always run.
    """
    from datetime import UTC, datetime

    from airflow.sdk.exceptions import AirflowRescheduleException

    ti = get_current_context()["ti"]
    index = -1 if ti.map_index is None else ti.map_index
    if index < parallel_models:
        return
    states = ti.get_task_states(dag_id=ti.dag_id, task_ids=[ti.task_id], run_ids=[ti.run_id])
    siblings = states.get(ti.run_id, {})
    waiting_on = [
        key
        for key, state in siblings.items()
        if int(key.rsplit("_", 1)[1]) < index and state not in _FINISHED
    ]
    if len(waiting_on) >= parallel_models:
        print(f"waiting for a model slot: {len(waiting_on)} earlier models still collect")
        raise AirflowRescheduleException(datetime.now(UTC) + SLOT_WAIT)  # type: ignore[no-untyped-call]


@dag(
    dag_id=BENCH_JUDGED,
    schedule=[JUDGED_ASSET],
    catchup=False,
    params={
        "experiment": Param(
            None, type=["null", "string"], description="When triggered by hand: the experiment."
        ),
        "apply": Param(False, type="boolean", description="Act on a passing promotion."),
        "mlflow_url": Param(
            None,
            type=["null", "string"],
            description="MLflow tracking URI [default: $MLFLOW_TRACKING_URI].",
        ),
    },
    default_args=_retrying,
    tags=["tipbench"],
    doc_md=_JUDGED_DOC,
)
def _bench_judged() -> None:
    @task
    def judged_experiments() -> list[dict[str, Any]]:
        """The experiments whose human scores changed: from the asset events, or the conf."""
        from tipbench.orchestration._phases import judged_requests

        context = get_current_context()
        events = context.get("triggering_asset_events") or {}
        extras = [dict(event.extra or {}) for batch in events.values() for event in batch]
        return judged_requests(dict(context["params"]), extras)

    @task
    def leaderboard(request: dict[str, Any]) -> dict[str, Any]:
        from tipbench.orchestration._phases import compare as rank

        return {**request, "leaderboard_run": rank(request["experiment"], request["tracking_uri"])}

    @task
    def promotion_gate(request: dict[str, Any]) -> dict[str, Any]:
        from tipbench.orchestration._phases import promotion_gate as gate

        return gate(request["experiment"], request["tracking_uri"], apply=request["apply"])

    ranked = leaderboard.expand(request=judged_experiments())
    promotion_gate.expand(request=ranked)


bench_collect = _bench_collect()
bench_judged = _bench_judged()
