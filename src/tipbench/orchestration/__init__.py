"""Orchestration on Apache Airflow 3: the `bench_collect`, `bench_judged` and
`policy_simulate` DAGs.

The DAGs live in `tipbench.orchestration.dags` and `.policy_dags` (the only modules that
import Airflow); `install_dags` writes the shim that enables them in a dags folder. Each task
calls one function of `_phases` (or `_policy_phases`), which calls tipbench's library;
`BenchConf` (`PolicySimulateConf`) is a run's conf.
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
from tipbench.orchestration._install import (
    SHIM,
    SHIM_NAME,
    install_dags,
    is_worker_without_database,
)
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
    "is_worker_without_database",
    "param_specs",
    "read_conf",
]
