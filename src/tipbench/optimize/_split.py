"""The split: training scenarios the optimizer sees, held-out scenarios it never sees.

Stated and seeded: `--train-scenarios a,b` names the training scenarios; `--train-scenarios
N` draws N of them; with neither, the optimizer draws what the gate can spare: every scenario
but the `pairs_needed(ALPHA)` a paired test needs to be able to promote (6 at α = 0.05), and
at most half of the suite. Either way the held-out scenarios are the rest, and there must be
some: a proposal is only ever promoted on scenarios it was not chosen on (the winner's curse:
the best of many variants scored on the same scenarios looks better than it is).

A draw is stratified by persona and time slot: training on both of one persona's scenarios
teaches the prompt that person, not the task. The rule: shuffle the suite's scenario ids
with `random.Random(seed)` (`sample` of all of them, in suite order), then take N one at a
time, each time the first in that order whose persona has the fewest training scenarios so
far, and among those whose time slot has the fewest. So the training scenarios come from as
many personas as they can (N personas when N is at most their number), then from as many
time slots; within that rule every choice is the seed's. A suite of one persona and one
slot gets `random.Random(seed).sample(ids, N)` itself.
"""

from __future__ import annotations

import random
from collections import Counter
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
        training = {s.id for s in stratified_draw(scenarios, seed, count)}
        how += ", stratified by persona and time slot"
    heldout = tuple(s for s in order if s not in training)
    if not heldout:
        raise ConfigError(
            "no held-out scenarios left: the optimizer would train on every scenario, and the "
            "gate would judge its proposals on the scenarios they were chosen on "
            "(train on fewer with --train-scenarios)"
        )
    return Split(tuple(s for s in order if s in training), heldout, how)


def stratified_draw(scenarios: Sequence[Scenario], seed: int, count: int) -> list[Scenario]:
    """`count` scenarios, spread over personas first and time slots second (the module's
    doc states the rule), in the order they were drawn."""
    order = random.Random(seed).sample(list(scenarios), len(scenarios))
    personas: Counter[str] = Counter()
    slots: Counter[str] = Counter()
    drawn: list[Scenario] = []
    for _ in range(count):
        chosen = min(order, key=lambda s: (personas[s.persona], slots[s.time_slot]))
        order.remove(chosen)  # min keeps the first of equals: the seed's order decides
        personas[chosen.persona] += 1
        slots[chosen.time_slot] += 1
        drawn.append(chosen)
    return drawn


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
