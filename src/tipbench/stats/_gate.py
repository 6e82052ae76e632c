"""The shape of a promotion gate, one for both loops: conditions, each with the figure that
decided it.

A prompt version (`promote`) and a tip-serving policy (`policy_gate`) are promoted by the
same rule of form: every condition must pass, and each says in words and numbers what
decided it, so that a refusal names its reason. What differs between the gates is their
conditions and their margins, which each gate names with its units
(`promote.DEFAULT_MARGIN_POINTS`, composite points; `policy_gate.DEFAULT_MARGIN_REWARD` and
`OFF_POLICY_MARGIN_REWARD`, reward per decision); the level is `ALPHA` for both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Condition", "all_passed"]


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
