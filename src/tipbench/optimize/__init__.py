"""Optimize: propose prompt versions with GEPA (reflective prompt evolution) on training
scenarios; the shortlist is judged on held-out scenarios, where only the gate promotes.

`optimize` is the whole run (`tipbench optimize`); `OptimizeConfig` its settings, validated
as the CLI, the admin API and the DAG give them; `split_scenarios` the stated, seeded split.
"""

from tipbench.optimize._config import (
    DEFAULT_MINIBATCH,
    DEFAULT_OPTIMIZE_EXPERIMENT,
    DEFAULT_SHORTLIST,
    HELDOUT_SUFFIX,
    OptimizeConfig,
)
from tipbench.optimize._heldout import HeldOut, run_heldout
from tipbench.optimize._lineage import Skipped
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
    iteration_cost,
    optimize,
    working_suite,
)
from tipbench.optimize._split import Split, gate_scenarios, split_scenarios
from tipbench.optimize._summary import IterationSummary, Program, shortlist
from tipbench.optimize._view import LineageRow, lineage_document, lineage_rows

__all__ = [
    "BEST_METRIC",
    "DEFAULT_MINIBATCH",
    "DEFAULT_OPTIMIZE_EXPERIMENT",
    "DEFAULT_SHORTLIST",
    "HELDOUT_SUFFIX",
    "KIND_OPTIMIZATION",
    "LINEAGE_FILE",
    "PLOT_FILE",
    "SHORTLIST_TAG",
    "HeldOut",
    "IterationSummary",
    "LineageRow",
    "OptimizationResult",
    "OptimizeConfig",
    "OptimizeProgress",
    "Program",
    "Skipped",
    "Split",
    "gate_scenarios",
    "iteration_cost",
    "lineage_document",
    "lineage_rows",
    "optimize",
    "run_heldout",
    "shortlist",
    "split_scenarios",
    "working_suite",
]
