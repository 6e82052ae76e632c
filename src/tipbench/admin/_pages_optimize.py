"""The Optimize page: start an optimization (a `tipbench optimize` job), watch it per
iteration, and read the lineage of its versions with their scores. Behind the same admin
session, CSRF and CSP as the other pages (`_pages`); its data comes from `/api/optimize`
and the job routes."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from tipbench.admin._optimize_jobs import OptimizationJobRequest
from tipbench.admin._pages import _page, require_page_admin
from tipbench.collect import BENCH_EXPERIMENT_PATTERN
from tipbench.optimize import DEFAULT_SHORTLIST
from tipbench.suite import load_suite

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_page_admin)])


@router.get("/optimize")
def optimize_page(request: Request) -> Response:
    defaults = OptimizationJobRequest()
    context = {
        "defaults": {
            "from_version": defaults.from_version,
            "model": defaults.model,
            "judge_model": defaults.judge_model,
            "reflection_model": defaults.reflection_model,
            "budget": defaults.budget,
            "train_scenarios": defaults.train_scenarios,
            "seed": defaults.seed,
            "experiment": defaults.experiment,
        },
        "versions": sorted(load_suite().prompts),
        "shortlist": DEFAULT_SHORTLIST,
        "experiment_pattern": html_pattern(BENCH_EXPERIMENT_PATTERN),
    }
    return _page(request, "optimize.html", context)


def html_pattern(regex: str) -> str:
    """`regex` as an HTML `pattern` attribute: browsers anchor it themselves and compile it
    with the `v` flag, where a `-` that ends a character class must be escaped (else the
    pattern is invalid and the browser checks nothing)."""
    return re.sub(r"(?<!\\)-\]", r"\\-]", regex.removeprefix("^").removesuffix("$"))
