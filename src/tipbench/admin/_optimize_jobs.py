"""An optimization started from the Optimize page: a job that runs `tipbench optimize`.

The body is an optimization request (`tipbench.optimize.OptimizeRequest`: the settings of
`tipbench optimize` on tipbench's working copy of the bundled suite, in a `tip-bench-*`
experiment) with a smaller budget's bound; the job runner runs it like a bench job, one at a
time, with its log, cancel and resume (the optimization resumes from its last finished
iteration), as the command line the request builds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tipbench.optimize import DEFAULT_REQUEST_BUDGET, OptimizeRequest

OPTIMIZATION_JOB: Literal["optimization"] = "optimization"
#: The largest budget a job from the web spends (a few hours on small models).
MAX_JOB_BUDGET = 2000


class OptimizationJobRequest(OptimizeRequest):
    """`POST /api/optimize/run`: what to optimize, with which models, for how long."""

    kind: Literal["optimization"] = OPTIMIZATION_JOB
    budget: int = Field(
        default=DEFAULT_REQUEST_BUDGET, ge=1, le=MAX_JOB_BUDGET, description="Evaluations to spend."
    )

    def cell_count(self) -> int:
        """What the job's progress counts to before it reports: its budget."""
        return self.budget
