"""Orchestration on Apache Airflow 3: the `bench_collect` and `bench_judged` DAGs.

The DAGs live in `tipbench.orchestration.dags` (the only module that imports Airflow);
`install_dags` writes the shim that enables them in a dags folder. Each task calls one
function of `_phases`, which calls tipbench's library; `BenchConf` is a run's conf.
"""

from tipbench.orchestration._conf import (
    BENCH_COLLECT,
    BENCH_JUDGED,
    JUDGED_ASSET_NAME,
    MAX_PARALLEL_MODELS,
    BenchConf,
    param_specs,
    read_conf,
)
from tipbench.orchestration._install import SHIM, SHIM_NAME, install_dags
from tipbench.orchestration._notify import announce_judged
from tipbench.orchestration._rest import (
    AirflowClient,
    AirflowError,
    AirflowSettings,
    AirflowUnavailable,
    TaskInstance,
)

__all__ = [
    "BENCH_COLLECT",
    "BENCH_JUDGED",
    "JUDGED_ASSET_NAME",
    "MAX_PARALLEL_MODELS",
    "SHIM",
    "SHIM_NAME",
    "AirflowClient",
    "AirflowError",
    "AirflowSettings",
    "AirflowUnavailable",
    "BenchConf",
    "TaskInstance",
    "announce_judged",
    "install_dags",
    "param_specs",
    "read_conf",
]
