"""How many threads the embedded model runs on: llama.cpp's choice, or `TIPBENCH_LLAMA_THREADS`.

llama.cpp's threads wait for one another by spinning. Unset, it generates on half the cores
and evaluates prompts on all of them, which is fastest when the model has the machine to
itself. Beside other busy processes (two models on one machine, e.g. two Airflow workers;
on Linux every session is a scheduling group of its own, so each gets its share of the
cores, not its count of threads) a thread that has no core holds the others up, and prompts
take several times as long. Give each model process the cores it can count on:
`TIPBENCH_LLAMA_THREADS=1` for two of them on two cores. The count is used both for
generating and for evaluating prompts.
"""

from __future__ import annotations

import os

THREADS_ENV = "TIPBENCH_LLAMA_THREADS"


def llama_threads() -> dict[str, int]:
    """`Llama`'s thread arguments: none (llama.cpp's defaults), or the variable's count for
    generating and for evaluating prompts.

    Raises:
        ValueError: the variable is set to something other than a count of threads.
    """
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return {}
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_ENV} must be a number of threads (1 or more), not {value!r}")
    return {"n_threads": int(value), "n_threads_batch": int(value)}
