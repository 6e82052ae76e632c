"""What the routers share: the service and the metrics (from the app's state, with `Depends`),
and the errors that name a field or a policy."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from tipbench._errors import ConfigError
from tipbench.policies import policy_spec
from tipbench.policy_service._service import PolicyService
from tipbench.policy_service.api._metrics import ServiceMetrics


def _service(request: Request) -> PolicyService:
    service: PolicyService = request.app.state.service
    return service


def _metrics(request: Request) -> ServiceMetrics:
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


Service = Annotated[PolicyService, Depends(_service)]
Metrics = Annotated[ServiceMetrics, Depends(_metrics)]


def known_policy(policy: str) -> str:
    """`policy`, or 404 naming it (cut short: a path may be long)."""
    try:
        policy_spec(policy)
    except ConfigError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    return policy


def field_error(loc: list[str | int], message: str) -> HTTPException:
    """A 422 shaped like FastAPI's own validation errors, naming the field."""
    return HTTPException(
        status.HTTP_422_UNPROCESSABLE_ENTITY,
        [{"type": "value_error", "loc": ["body", *loc], "msg": message}],
    )
