"""Run one of tipbench's DAGs with `dag.test()` in this process; print what happened as JSON.

Usage: python -m tipbench_dev.dag_test DAGS_FOLDER DAG_ID CONF_JSON

Runs in a subprocess of the test (or benchmark) so that Airflow's configuration (AIRFLOW_HOME, its
database) and logging stay out of pytest's process. The last line of stdout is
`{"state": ..., "tasks": {task[map_index]: state}, "xcoms": {task[map_index]: value}}`.
"""

from __future__ import annotations

import importlib
import json
import sys


def main() -> None:
    folder, dag_id, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, folder)
    shim = importlib.import_module("tipbench_dags")  # what `tipbench airflow install-dags` wrote
    dag = getattr(shim, dag_id)
    run = dag.test(run_conf=conf)

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    def name(task_id: str, map_index: int) -> str:
        return task_id if map_index < 0 else f"{task_id}[{map_index}]"

    with create_session() as session:
        tasks = {
            name(ti.task_id, ti.map_index): str(ti.state)
            for ti in run.get_task_instances(session=session)
        }
        rows = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag_id,
                XComModel.run_id == run.run_id,
                XComModel.key == "return_value",
            )
        )
        xcoms = {name(row.task_id, row.map_index): XComModel.deserialize_value(row) for row in rows}
    print(json.dumps({"state": str(run.state), "tasks": tasks, "xcoms": xcoms}, default=str))


if __name__ == "__main__":
    main()
