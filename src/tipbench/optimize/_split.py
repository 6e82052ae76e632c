"""The split: training scenarios the optimizer sees, held-out scenarios it never sees.

Stated and seeded: `--train-scenarios a,b` names the training scenarios; `--train-scenarios
N` draws N of them with `random.Random(seed).sample` over the suite's scenario ids (in suite
order); with neither, the optimizer trains on what the gate can spare: every scenario but
the `pairs_needed(ALPHA)` a paired test needs to be able to promote (6 at α = 0.05), and at
most half of the suite. Either way the held-out scenarios are the rest, and there must be
some: a proposal is only ever promoted on scenarios it was not chosen on (the winner's curse:
the best of many variants scored on the same scenarios looks better than it is).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from tipbench._errors import ConfigError
from tipbench._words import counted
from tipbench.stats import ALPHA, pairs_needed
from tipbench.suite import Scenario


@dataclass(frozen=True)
class Split:
    """Which scenarios train, which are held out (ids, in suite order), and how it was drawn."""

    training: tuple[str, ...]
    heldout: tuple[str, ...]
    how: str  # "named", "drawn with seed 42", ...

    def describe(self) -> str:
        """`training on 2 scenarios (a, b), holding out 6 (c, …): drawn with seed 42`."""
        return (
            f"training on {counted(len(self.training), 'scenario')} "
            f"({', '.join(self.training)}), holding out {len(self.heldout)} "
            f"({', '.join(self.heldout)}): {self.how}"
        )

    def gate_warning(self) -> str | None:
        """Why the gate cannot promote on so few held-out scenarios, if it cannot."""
        needed = gate_scenarios()
        if len(self.heldout) >= needed:
            return None
        return (
            f"only {counted(len(self.heldout), 'held-out scenario')}: the gate's paired test "
            f"needs {needed} to be able to promote (train on fewer scenarios)"
        )


def gate_scenarios() -> int:
    """How many scenarios the gate's paired test needs to be able to reach p < α."""
    return pairs_needed(ALPHA)


def split_scenarios(
    scenarios: Sequence[Scenario], seed: int, count: int | None = None, ids: Sequence[str] = ()
) -> Split:
    """Split the suite's scenarios into training and held-out ones (see the module's doc).

    Raises:
        ConfigError: an unknown or repeated id, a count the suite cannot give, or no
            held-out scenario left.
    """
    order = [s.id for s in scenarios]
    if ids:
        training, how = _named(order, ids), "named"
    else:
        if count is None:
            count, how = _default_count(len(order)), f"the default, drawn with seed {seed}"
        else:
            how = f"drawn with seed {seed}"
        if count > len(order):
            raise ConfigError(
                f"--train-scenarios {count}: the suite has {counted(len(order), 'scenario')}"
            )
        training = set(random.Random(seed).sample(order, count))
    heldout = tuple(s for s in order if s not in training)
    if not heldout:
        raise ConfigError(
            "no held-out scenarios left: the optimizer would train on every scenario, and the "
            "gate would judge its proposals on the scenarios they were chosen on "
            "(train on fewer with --train-scenarios)"
        )
    return Split(tuple(s for s in order if s in training), heldout, how)


def _named(order: list[str], ids: Sequence[str]) -> set[str]:
    known = set(order)
    for scenario_id in ids:
        if scenario_id not in known:
            raise ConfigError(f"--train-scenarios: unknown scenario {scenario_id!r}")
    if len(set(ids)) != len(ids):
        raise ConfigError("--train-scenarios: a scenario is named twice")
    return set(ids)


def _default_count(total: int) -> int:
    """Train on what the gate can spare (at most half), and on one scenario at least."""
    return max(1, min(total - gate_scenarios(), total // 2))
