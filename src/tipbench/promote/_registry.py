"""The MLflow Prompt Registry: which prompt version is in production, and moving it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipbench._errors import TrackingError
from tipbench.suite import PromptVersion
from tipbench.tracking import short_error

if TYPE_CHECKING:
    from mlflow import MlflowClient

DEFAULT_PROMPT_NAME = "tipbench-tips"
PRODUCTION_ALIAS = "production"

_PLACEHOLDER = re.compile(r"\$(?:(\$)|(\w+)|\{(\w+)\})")


def registry_template(template: str) -> str:
    """A suite template (`$name`) in the registry's syntax (`{{name}}`)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        return "{{" + (match.group(2) or match.group(3)) + "}}"

    return _PLACEHOLDER.sub(replace, template)


@dataclass(frozen=True)
class ProductionPrompt:
    """The registry version that the `production` alias points at."""

    name: str
    version: int
    prompt_version: str  # the suite's prompt version, e.g. v2-mentor
    template_hash: str


def production_prompt(client: MlflowClient, name: str) -> ProductionPrompt | None:
    """What is in production now, or None if nothing was ever promoted."""
    try:
        if client.get_prompt(name) is None:
            return None
        found = client.get_prompt_version_by_alias(name, PRODUCTION_ALIAS)
    except Exception as exc:
        if "RESOURCE_DOES_NOT_EXIST" in str(exc) or "not found" in str(exc).lower():
            return None
        raise TrackingError(f"cannot read prompt {name!r}: {short_error(exc)}") from None
    return ProductionPrompt(
        name=name,
        version=int(found.version),
        prompt_version=found.tags.get("prompt_version", ""),
        template_hash=found.tags.get("template_hash", ""),
    )


def promote_prompt(
    client: MlflowClient, name: str, prompt: PromptVersion, tags: dict[str, str]
) -> int:
    """Register `prompt` (once per template) and move the `production` alias to it."""
    try:
        version = _registered_version(client, name, prompt.template_hash)
        if version is None:
            registered = client.register_prompt(
                name,
                [
                    {"role": "system", "content": registry_template(prompt.system)},
                    {"role": "user", "content": registry_template(prompt.user)},
                ],
                commit_message=f"tipbench promote: {prompt.version}",
                tags={
                    "prompt_version": prompt.version,
                    "template_hash": prompt.template_hash,
                    **tags,
                },
            )
            version = int(registered.version)
        client.set_prompt_alias(name, PRODUCTION_ALIAS, version)
    except TrackingError:
        raise
    except Exception as exc:
        raise TrackingError(f"cannot register prompt {name!r}: {short_error(exc)}") from None
    return version


def _registered_version(client: MlflowClient, name: str, template_hash: str) -> int | None:
    if client.get_prompt(name) is None:
        return None
    token = None
    while True:
        page = client.search_prompt_versions(name, page_token=token)
        for version in page:
            if version.tags.get("template_hash") == template_hash:
                return int(version.version)
        token = page.token
        if not token:
            return None
