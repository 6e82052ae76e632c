"""The Policies page: the serving roles and counts, the latest simulation, the off-policy
evaluation, the promotion dry run, and a form that starts a simulation as a job. Behind the
same admin session, CSRF and CSP as the other pages (`_pages`); its data comes from
`/api/policies`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from tipbench.admin._pages import _page, require_page_admin
from tipbench.admin._policy_jobs import POLICY_EXPERIMENT_PATTERN, SimulationJobRequest
from tipbench.policies import POLICIES
from tipbench.policy_gate import DEFAULT_MARGIN_REWARD, OFF_POLICY_MARGIN_REWARD

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_page_admin)])


@router.get("/policies")
def policies_page(request: Request) -> Response:
    defaults = SimulationJobRequest()
    context = {
        "policies": list(POLICIES),
        "defaults": {
            "policies": list(defaults.policies),
            "seeds": defaults.seeds,
            "days": defaults.days,
            "users": defaults.users,
            "experiment": defaults.experiment,
        },
        # the browser's pattern attribute takes the expression without its anchors
        "experiment_pattern": POLICY_EXPERIMENT_PATTERN.strip("^$"),
        "margin": DEFAULT_MARGIN_REWARD,
        "off_policy_margin": OFF_POLICY_MARGIN_REWARD,
    }
    return _page(request, "policies.html", context)
