"""Judged cell runs written straight into an MLflow store: one home, shared with the
benchmarks, in `tipbench_dev.judged_runs`."""

from tipbench_dev.judged_runs import (
    AUTO_JUDGE,
    JudgedCell,
    scores,
    uniform,
    write_cells,
)

__all__ = ["AUTO_JUDGE", "JudgedCell", "scores", "uniform", "write_cells"]
