"""Scenarios and prompt versions: the deterministic inputs of every cell."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from string import Template
from typing import Any, Literal

# Variables a prompt template may use, as `$name` or `${name}`.
PLACEHOLDERS = frozenset(
    {
        "n_tips",
        "persona_name",
        "persona_description",
        "time_slot",
        "local_time",
        "slot_context",
        "tasks",
    }
)


def content_hash(value: Any) -> str:
    """A short, stable hash of JSON-serialisable content."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Scenario:
    """One persona at one time slot, with the persona's task list."""

    id: str
    persona: str
    persona_name: str
    persona_description: str
    time_slot: str
    time_slot_label: str
    local_time: str
    slot_context: str
    tasks: tuple[str, ...]

    @property
    def content_hash(self) -> str:
        return content_hash(self.context())

    def context(self) -> dict[str, Any]:
        """Everything a judge needs to know about the scenario."""
        data = asdict(self)
        data["tasks"] = list(self.tasks)
        return data


Message = tuple[str, str]  # (role, content)

#: The parts of a prompt version, each a template.
Component = Literal["system", "user"]
COMPONENTS: tuple[Component, ...] = ("system", "user")


@dataclass(frozen=True)
class Proposal:
    """Where a proposed prompt version came from (`tipbench optimize`): its parent version,
    the optimization and iteration that proposed it, the part that was rewritten, the
    reflection model's reasons, and its mean composite per training scenario it was scored
    on (the automatic tier)."""

    parent: str
    optimization: str
    iteration: int
    component: Component
    reasons: str = ""
    training_scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PromptVersion:
    """A prompt version: a system and a user template over the scenario's variables, with
    its lineage if an optimization proposed it."""

    version: str
    description: str
    system: str
    user: str
    proposal: Proposal | None = field(default=None, compare=False)

    def template(self, component: Component) -> str:
        """The template of one part: `system` or `user`."""
        return self.system if component == "system" else self.user

    @property
    def template_hash(self) -> str:
        return content_hash([self.system, self.user])

    def render(self, scenario: Scenario, n_tips: int) -> tuple[Message, ...]:
        """The chat messages for `scenario`, asking for `n_tips` tips."""
        values = {
            "n_tips": str(n_tips),
            "persona_name": scenario.persona_name,
            "persona_description": scenario.persona_description,
            "time_slot": scenario.time_slot_label,
            "local_time": scenario.local_time,
            "slot_context": scenario.slot_context,
            "tasks": "\n".join(f"- {task}" for task in scenario.tasks),
        }
        return (
            ("system", Template(self.system).substitute(values).strip()),
            ("user", Template(self.user).substitute(values).strip()),
        )


def template_placeholders(template: str) -> set[str]:
    """The `$name` placeholders of a template (raises ValueError on a bad `$`)."""
    parsed = Template(template)
    if not parsed.is_valid():
        raise ValueError("invalid '$' placeholder (write '$$' for a literal dollar sign)")
    return set(parsed.get_identifiers())
