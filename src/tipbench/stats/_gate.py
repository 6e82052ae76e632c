"""The shape of a promotion gate, one for both loops: conditions, each with the figure that
decided it.

A prompt version (`promote`) and a tip-serving policy (`policy_gate`) are promoted by the
same rule of form: every condition must pass, and each says in words and numbers what
decided it, so that a refusal names its reason. Both write their verdict the same way
(`gate_fields`): ``"promote"`` and the ``"conditions"``, each ``{"name", "passed",
"figure"}``. What differs between the gates is their
conditions and their margins, which each gate names with its units
(`promote.DEFAULT_MARGIN_POINTS`, composite points; `policy_gate.DEFAULT_MARGIN_REWARD` and
`OFF_POLICY_MARGIN_REWARD`, reward per decision); the level is `ALPHA` for both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Condition", "all_passed", "gate_fields"]


@dataclass(frozen=True)
class Condition:
    """One condition of a promotion gate and what it found.

    Attributes:
        name: The condition, short (`beats production`, `not worse off-policy`).
        passed: Whether it holds.
        figure: What decided it, in words and numbers (a difference with its interval and
            p-value, a count and the count needed, …).
    """

    name: str
    passed: bool
    figure: str

    def to_dict(self) -> dict[str, str | bool]:
        """JSON-ready: ``{"name", "passed", "figure"}``."""
        return {"name": self.name, "passed": self.passed, "figure": self.figure}


def all_passed(conditions: Iterable[Condition]) -> bool:
    """A gate promotes only if it has conditions and every one of them passed."""
    found = list(conditions)
    return bool(found) and all(condition.passed for condition in found)


def gate_fields(conditions: Iterable[Condition]) -> dict[str, Any]:
    """A gate's verdict as JSON, the one serialiser of both gates: ``{"promote": bool,
    "conditions": [{"name", "passed", "figure"}, …]}`` (`all_passed`, `Condition.to_dict`)."""
    found = list(conditions)
    return {"promote": all_passed(found), "conditions": [c.to_dict() for c in found]}
