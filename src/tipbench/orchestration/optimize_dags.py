"""tipbench's `prompt_optimize` DAG: `tipbench optimize` on Airflow (SPEC §6, issue 35).

`plan` (validates the conf: typed Params derived from its model, so the UI, the REST API and
the task refuse the same values; checks the start version, the split, the budget and every
model's size, writing nothing) → `propose_1` … `propose_3`, the proposal rounds (each spends
its share of the budget; a retried round resumes from its last finished iteration) →
`heldout_conf` (the last round's shortlist and the start on the held-out scenarios, as a
`bench_collect` conf; skipped when the shortlist is empty) → `bench_collect`'s own tasks on
it: `heldout_plan` → `heldout_collect` (mapped per model) → `heldout_judge` →
`heldout_export` (XCom: the judge file's artifact URI) → `heldout_compare` → `gate` (the
promotion gate's dry run on the held-out experiment). People then judge the held-out cells,
and `bench_judged` (or `tipbench promote --apply`) acts.

The rounds write proposals into tipbench's working copy of the suite in the worker's
`$TIPBENCH_HOME` and keep GEPA's state there: on several machines, that folder is shared.
Parsing imports Airflow's SDK and the conf models only; every task imports what it calls.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from tipbench.orchestration._conf import param_specs
from tipbench.orchestration._optimize_phases import PROMPT_OPTIMIZE, ROUNDS, OptimizeConf

_retrying: dict[str, Any] = {
    "retries": 2,
    "retry_delay": timedelta(seconds=15),
    "execution_timeout": timedelta(hours=6),
}


@dag(
    dag_id=PROMPT_OPTIMIZE,
    schedule=None,
    catchup=False,
    max_active_runs=1,  # one optimization at a time: one model resident
    params={name: Param(**spec) for name, spec in param_specs(OptimizeConf).items()},
    default_args=_retrying,
    tags=["tipbench"],
    doc_md=__doc__,
)
def _prompt_optimize() -> None:
    @task
    def plan() -> dict[str, Any]:
        """A bad conf or input fails here, before anything is written."""
        from tipbench.orchestration._optimize_phases import plan as plan_optimization
        from tipbench.orchestration._task_control import failing_at_once

        context = get_current_context()
        dag_run = context["dag_run"]
        conf = dict(dag_run.conf or {}) if dag_run is not None else {}
        values = {**dict(context["params"]), **conf}
        return failing_at_once(lambda: plan_optimization(values))

    def proposal_round(number: int) -> Any:
        @task(task_id=f"propose_{number}")
        def propose(order: dict[str, Any], _before: Any = None) -> dict[str, Any]:
            """One round of proposals; stopped, it ends as Ctrl-C ends `tipbench optimize`."""
            from tipbench.orchestration._optimize_phases import propose as run_round
            from tipbench.orchestration._task_control import failing_at_once, stoppable

            with stoppable():
                return failing_at_once(lambda: run_round(order, number))

        return propose

    @task
    def heldout_conf(order: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowSkipException

        from tipbench.orchestration._optimize_phases import heldout_conf as conf_of

        conf = conf_of(order, last)
        if conf is None:
            raise AirflowSkipException("no proposal did better on the training scenarios")
        return conf

    @task
    def heldout_plan(conf: dict[str, Any]) -> list[dict[str, Any]]:
        from tipbench.orchestration._phases import plan as plan_grid
        from tipbench.orchestration._store import configured_executors
        from tipbench.orchestration._task_control import failing_at_once

        return failing_at_once(lambda: plan_grid(conf, configured_executors()))

    @task(map_index_template="{{ task.op_kwargs['order']['model'] }}")
    def heldout_collect(order: dict[str, Any]) -> dict[str, Any]:
        from tipbench.orchestration._phases import collect_model
        from tipbench.orchestration._task_control import failing_at_once, origin_tags, stoppable

        origin = origin_tags(get_current_context())
        conf, model, uri = order["conf"], order["model"], order["tracking_uri"]
        with stoppable():
            return failing_at_once(lambda: collect_model(conf, model, uri, origin))

    @task
    def heldout_judge(orders: list[dict[str, Any]]) -> dict[str, Any]:
        from tipbench.orchestration._phases import judge_auto
        from tipbench.orchestration._task_control import failing_at_once, stoppable

        with stoppable():
            return failing_at_once(lambda: judge_auto(orders[0]["conf"], orders[0]["tracking_uri"]))

    @task
    def heldout_export(orders: list[dict[str, Any]]) -> str:
        from tipbench.orchestration._phases import export_for_judge
        from tipbench.orchestration._task_control import failing_at_once

        order = orders[0]
        return failing_at_once(lambda: export_for_judge(order["conf"], order["tracking_uri"]))

    @task
    def heldout_compare(orders: list[dict[str, Any]]) -> str | None:
        from tipbench.orchestration._phases import compare
        from tipbench.orchestration._task_control import failing_at_once

        order = orders[0]
        experiment = str(order["conf"]["experiment"])
        return failing_at_once(lambda: compare(experiment, order["tracking_uri"]))

    @task
    def gate(orders: list[dict[str, Any]]) -> dict[str, Any]:
        """The promotion gate as a dry run, on the held-out experiment only."""
        from tipbench.orchestration._phases import promotion_gate
        from tipbench.orchestration._task_control import failing_at_once

        order = orders[0]
        experiment = str(order["conf"]["experiment"])
        return failing_at_once(
            lambda: promotion_gate(experiment, order["tracking_uri"], apply=False)
        )

    order: Any = plan()
    last: Any = None
    for number in range(1, ROUNDS + 1):
        last = proposal_round(number)(order, last)
    conf: Any = heldout_conf(order, last)
    orders: Any = heldout_plan(conf)
    collected = heldout_collect.expand(order=orders)
    judged = collected >> heldout_judge(orders)
    judged >> heldout_export(orders) >> heldout_compare(orders) >> gate(orders)


prompt_optimize = _prompt_optimize()
