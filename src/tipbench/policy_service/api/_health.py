"""The monitoring routes (any token, the monitor token included): `/ping`, `/ready`, `/metrics`.

`/ready` answers 200 only when the state store can be read and written within
`TIPBENCH_POLICY_READY_TIMEOUT_S` (1 s by default), else 503: take the replica out of the
load balancer, not down (it recovers by itself when the store does). `/ping` answers whenever
the process does (liveness).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Request, Response, status

from tipbench._redact import redact_text
from tipbench.policy_service.api._deps import Metrics, Service
from tipbench.policy_service.store._store import StoreUnavailable

router = APIRouter(tags=["health"])
# Beyond the store's own timeout, the wait for its answer (the connection pool may be busy).
_GRACE_S = 0.5


@router.get("/ping")
def ping() -> dict[str, bool]:
    """Does nothing but answer: the process is alive (liveness)."""
    return {"ok": True}


@router.get("/ready", responses={503: {"description": "the state store cannot answer"}})
async def ready(request: Request, service: Service, metrics: Metrics) -> dict[str, bool]:
    """The state store answers in time (readiness): 200, else 503 with the reason."""
    timeout_s: float = request.app.state.settings.policy_ready_timeout_s
    try:
        await asyncio.wait_for(
            asyncio.to_thread(service.store.check, timeout_s), timeout_s + _GRACE_S
        )
    except (StoreUnavailable, TimeoutError) as exc:
        metrics.store_errors.labels("/ready").inc()
        reason = str(exc) if isinstance(exc, StoreUnavailable) else "no answer in time"
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"the state store is not ready: {redact_text(reason)}",
            headers={"Retry-After": "1"},
        ) from None
    return {"ready": True}


@router.get("/metrics", response_class=Response)
def metrics_text(request: Request, metrics: Metrics) -> Response:
    """The service's metrics in Prometheus' text format (see the docs for each metric)."""
    body, content_type = metrics.exposition(request.headers.get("accept"))
    return Response(body, media_type=content_type)
