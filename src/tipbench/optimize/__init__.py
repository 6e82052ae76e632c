"""Optimize: propose prompt versions with GEPA (reflective prompt evolution) on training
scenarios; the shortlist is judged on held-out scenarios, where only the gate promotes.

`optimize` is the whole run (`tipbench optimize`); `OptimizeConfig` its settings, validated
as the CLI, the admin API and the DAG give them, and its command line (`cli_args`);
`OptimizeRequest` the same asked for from outside a shell (the admin job and the DAG's conf
extend it); `split_scenarios` the stated, seeded split.

Only the settings are imported with the package: the rest (GEPA, MLflow's callers, the
leaderboards) loads on first use, so that the DAG file and `--help` stay cheap.
"""

from typing import TYPE_CHECKING, Any

from tipbench.optimize._config import (
    DEFAULT_MINIBATCH,
    DEFAULT_OPTIMIZE_EXPERIMENT,
    DEFAULT_SHORTLIST,
    HELDOUT_SUFFIX,
    ROLES,
    ModelRole,
    OptimizeConfig,
)
from tipbench.optimize._request import DEFAULT_REQUEST_BUDGET, DEFAULT_START, OptimizeRequest

if TYPE_CHECKING:
    from tipbench.optimize._checks import SkipReason
    from tipbench.optimize._cost import Cost, Speed
    from tipbench.optimize._engine import iteration_ceiling
    from tipbench.optimize._heldout import HeldOut, run_heldout
    from tipbench.optimize._lineage import Skipped, skipped_by_reason
    from tipbench.optimize._record import (
        BEST_METRIC,
        KIND_OPTIMIZATION,
        LINEAGE_FILE,
        PLOT_FILE,
        SHORTLIST_TAG,
    )
    from tipbench.optimize._run import (
        OptimizationResult,
        OptimizeProgress,
        Prepared,
        iteration_cost,
        optimize,
        prepare,
        working_suite,
    )
    from tipbench.optimize._split import Split, gate_scenarios, split_scenarios
    from tipbench.optimize._status import (
        OptimizationStatus,
        optimization_chart,
        optimization_detail,
        optimizations,
    )
    from tipbench.optimize._summary import IterationSummary, Program, shortlist
    from tipbench.optimize._view import LineageRow, lineage_document, lineage_rows


_LAZY = {
    "HeldOut": "_heldout",
    "run_heldout": "_heldout",
    "Skipped": "_lineage",
    "Cost": "_cost",
    "Speed": "_cost",
    "skipped_by_reason": "_lineage",
    "SkipReason": "_checks",
    "BEST_METRIC": "_record",
    "KIND_OPTIMIZATION": "_record",
    "LINEAGE_FILE": "_record",
    "PLOT_FILE": "_record",
    "SHORTLIST_TAG": "_record",
    "OptimizationResult": "_run",
    "OptimizeProgress": "_run",
    "Prepared": "_run",
    "iteration_cost": "_run",
    "iteration_ceiling": "_engine",
    "optimize": "_run",
    "prepare": "_run",
    "working_suite": "_run",
    "Split": "_split",
    "OptimizationStatus": "_status",
    "optimization_chart": "_status",
    "optimization_detail": "_status",
    "optimizations": "_status",
    "gate_scenarios": "_split",
    "split_scenarios": "_split",
    "IterationSummary": "_summary",
    "Program": "_summary",
    "shortlist": "_summary",
    "LineageRow": "_view",
    "lineage_document": "_view",
    "lineage_rows": "_view",
}


def __getattr__(name: str) -> Any:
    if (module := _LAZY.get(name)) is not None:
        import importlib

        try:
            loaded = importlib.import_module(f"tipbench.optimize.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != "gepa":
                raise
            from tipbench._errors import ConfigError

            raise ConfigError(
                "tipbench optimize needs the gepa package: pip install 'tipbench[optimize]'"
            ) from exc
        return getattr(loaded, name)
    raise AttributeError(f"module 'tipbench.optimize' has no attribute {name!r}")


__all__ = [
    "BEST_METRIC",
    "DEFAULT_MINIBATCH",
    "DEFAULT_OPTIMIZE_EXPERIMENT",
    "DEFAULT_REQUEST_BUDGET",
    "DEFAULT_SHORTLIST",
    "DEFAULT_START",
    "HELDOUT_SUFFIX",
    "KIND_OPTIMIZATION",
    "LINEAGE_FILE",
    "PLOT_FILE",
    "ROLES",
    "SHORTLIST_TAG",
    "Cost",
    "HeldOut",
    "IterationSummary",
    "LineageRow",
    "ModelRole",
    "OptimizationResult",
    "OptimizationStatus",
    "OptimizeConfig",
    "OptimizeProgress",
    "OptimizeRequest",
    "Prepared",
    "Program",
    "SkipReason",
    "Skipped",
    "Speed",
    "Split",
    "gate_scenarios",
    "iteration_ceiling",
    "iteration_cost",
    "lineage_document",
    "lineage_rows",
    "optimization_chart",
    "optimization_detail",
    "optimizations",
    "optimize",
    "prepare",
    "run_heldout",
    "shortlist",
    "skipped_by_reason",
    "split_scenarios",
    "working_suite",
]
