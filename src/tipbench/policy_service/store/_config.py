"""The serving config every replica reads from the state: the roles, each policy's settings,
the reward window and the log's retention.

The state keeps a *partial* document, only what was ever set; the config in force
(`ServingConfig`) fills the rest with defaults. Every change is a merge of a partial document
into the stored one, done in one transaction by the store (`StateStore.update_config`):

- the flags of `tipbench policy serve` *seed* it: they fill only what the state lacks, so a
  new replica or a restart never reverts a promotion; with `--reconfigure` the flags given
  win instead, and the change is logged;
- `PUT /config` (admin scope) changes what its body names and keeps the rest.

The merged document is validated whole (`resolve`): an unknown policy, a policy both live and
shadow, a non-finite or absurd setting is refused naming its field, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tipbench.policies import POLICIES, PolicyConfig

DEFAULT_LIVE = "egreedy-v1"
MAX_REWARD_WINDOW_S = 366 * 24 * 3600.0
MAX_RETENTION_S = 100 * 366 * 24 * 3600.0

ConfigDocument = dict[str, Any]
"""A partial serving config as stored: `live`, `shadows`, `policies` (name → partial
settings), `reward_window_s`, `default_reward`, `retention_s`; any may be missing."""


class ServingConfig(BaseModel):
    """The serving config in force (every field filled)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    live: str = DEFAULT_LIVE
    shadows: tuple[str, ...] = ()
    policies: dict[str, PolicyConfig] = Field(
        default_factory=dict, description="each registered policy's settings"
    )
    reward_window_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_REWARD_WINDOW_S,
        description="a decision with no reward this long after it expires (None: never)",
    )
    default_reward: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the reward an expired decision is logged and learned with (None: none)",
    )
    retention_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RETENTION_S,
        description="settled decisions older than this are pruned from the log (None: kept)",
    )

    @field_validator("live")
    @classmethod
    def _known_live(cls, live: str) -> str:
        return _known(live)

    @field_validator("shadows")
    @classmethod
    def _known_shadows(cls, shadows: tuple[str, ...]) -> tuple[str, ...]:
        for name in shadows:
            _known(name)
        if len(set(shadows)) != len(shadows):
            raise ValueError("a shadow policy is listed twice")
        return shadows

    @field_validator("policies")
    @classmethod
    def _known_policies(cls, policies: dict[str, PolicyConfig]) -> dict[str, PolicyConfig]:
        for name in policies:
            _known(name)
        return policies

    @model_validator(mode="after")
    def _live_is_no_shadow(self) -> ServingConfig:
        if self.live in self.shadows:
            raise ValueError(f"{self.live!r} cannot be live and a shadow at once")
        return self

    def settings(self, policy: str) -> PolicyConfig:
        """The settings `policy` decides with."""
        return self.policies.get(policy) or PolicyConfig()

    def role(self, policy: str) -> str:
        if policy == self.live:
            return "live"
        return "shadow" if policy in self.shadows else "off"


def _known(name: str) -> str:
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name[:64]!r} (known: {', '.join(POLICIES)})")
    return name


def resolve(document: Mapping[str, Any], defaults: PolicyConfig | None = None) -> ServingConfig:
    """The config in force for a stored document: every policy's settings filled from
    `defaults`. Raises `pydantic.ValidationError` naming the field of a bad value."""
    base = (defaults or PolicyConfig()).model_dump()
    stored = document.get("policies") or {}
    policies = {name: {**base, **stored.get(name, {})} for name in POLICIES}
    unknown = [name for name in stored if name not in POLICIES]
    for name in unknown:
        policies[name] = stored[name]  # refused by validation, naming it
    return ServingConfig.model_validate({**document, "policies": policies})


def merge(base: Mapping[str, Any], change: Mapping[str, Any]) -> ConfigDocument:
    """`base` with what `change` names replaced (a policy's settings field by field)."""
    merged: ConfigDocument = {**base, **{k: v for k, v in change.items() if k != "policies"}}
    if "policies" in change:
        policies = {name: dict(fields) for name, fields in (base.get("policies") or {}).items()}
        for name, fields in (change["policies"] or {}).items():
            policies[name] = {**policies.get(name, {}), **fields}
        merged["policies"] = policies
    if "shadows" in merged:
        merged["shadows"] = list(merged["shadows"])
    return merged


def seed_document(config: ServingConfig) -> ConfigDocument:
    """A complete document holding `config` (what a serve's flags seed an empty state with)."""
    return {
        "live": config.live,
        "shadows": list(config.shadows),
        "policies": {name: settings.model_dump() for name, settings in config.policies.items()},
        "reward_window_s": config.reward_window_s,
        "default_reward": config.default_reward,
        "retention_s": config.retention_s,
    }


def describe_change(before: ServingConfig, after: ServingConfig) -> list[str]:
    """What differs, one `name old → new` item per field, for the log line of a change."""
    changes: list[str] = []
    for field in ("live", "shadows", "reward_window_s", "default_reward", "retention_s"):
        old, new = getattr(before, field), getattr(after, field)
        if old != new:
            changes.append(f"{field} {_shown(old)} → {_shown(new)}")
    for name in POLICIES:
        old_settings, new_settings = before.settings(name), after.settings(name)
        for field in PolicyConfig.model_fields:
            old, new = getattr(old_settings, field), getattr(new_settings, field)
            if old != new:
                changes.append(f"{name}.{field} {_shown(old)} → {_shown(new)}")
    return changes


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]"
    return "none" if value is None else str(value)
