"""The admin routes (the admin scope, `TIPBENCH_POLICY_ADMIN_TOKEN`): change the serving config
(roles, settings, expiry, retention), forget."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from pydantic import ValidationError

from tipbench.policies import POLICIES
from tipbench.policy_service.api._deps import Service, field_error
from tipbench.policy_service.api._models import (
    ConfigBody,
    ConfigResponse,
    ResetRequest,
    ResetResponse,
)
from tipbench.policy_service.store._config import ServingConfig

router = APIRouter()


def config_response(config: ServingConfig) -> ConfigResponse:
    return ConfigResponse.model_validate(config.model_dump())


@router.put("/config", response_model=ConfigResponse, tags=["config"])
def put_config(body: ConfigBody, service: Service) -> ConfigResponse:
    """Change what the body names (roles, settings per policy, reward window, default reward,
    retention), at once for every replica, without a restart; what it does not name is kept.
    The result is checked whole: 422 naming the field, and nothing changes."""
    try:
        return config_response(service.configure(body.change()))
    except ValidationError as exc:
        errors = [
            {"type": e["type"], "loc": ["body", *e["loc"]], "msg": e["msg"]} for e in exc.errors()
        ]
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, errors) from None


@router.post("/reset", response_model=ResetResponse, tags=["config"])
def reset(body: ResetRequest, service: Service) -> ResetResponse:
    """Forget everything (`all`), one policy's models and decisions (`policy`), or one user's
    profile and decisions (`user`)."""
    if body.scope == "policy":
        if body.policy is None:
            raise field_error(["policy"], "a policy reset names the policy")
        if body.policy not in POLICIES:
            raise field_error(["policy"], f"unknown policy {body.policy!r}")
    if body.scope == "user" and body.user_id is None:
        raise field_error(["user_id"], "a user reset names the user")
    service.reset(body.scope, body.policy, body.user_id)
    return ResetResponse(scope=body.scope, policy=body.policy, user_id=body.user_id)
