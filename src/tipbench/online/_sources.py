"""The online tier's estimand: for each source of tips (a bench cell, `model|prompt_version`),
the target policy that serves that source's tips.

On a decision where source S offered at least one candidate, the target π_S serves one of S's
tips, chosen as the logging policy chose among them: π_S(j) = p(j)/P_S for j of S (0 for the
others), P_S = Σ_{j of S} p(j). Its value V_S is the mean reward users would give if, on every
request where S had a tip on offer, they were shown S's tip, the live policy picking which of
them as it does. Decisions where S offered nothing do not enter V_S (the target is unknown
there: a NaN row, which `tipbench.evaluate` leaves out). Importance weighting by π_S/p puts
weight 1/P_S on the decisions whose served tip came from S and 0 on the rest, so SNIPS of π_S is
the propensity-corrected mean reward of the decisions whose tip came from S: the two readings
of "the value of serving a source's tips" are one estimand.

`SourceTargets` turns each chunk of logged traffic into the same traffic with these targets
(one per source, the candidates without a known source as "unknown source"), so that
`tipbench.evaluate` reads, checks and estimates them as it does any policy: the log's rules
(overlap, clipping, duplicate decisions, the effective-sample floor, bounded memory) hold as
they are. Where P_S is 0 (the logger could not show S's tips), π_S spreads evenly over S's
candidates, which the logger never shows: evaluate reports "no overlap".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tipbench.evaluate import Traffic
from tipbench.policy_service import UNKNOWN_SOURCE, source_key

SourceFields = Mapping[str, Any] | None


@dataclass(frozen=True)
class SourceRun:
    """A cell run a logged provenance names, with what the provenance says of it."""

    run_id: str
    experiment: str | None
    model: str | None
    prompt_version: str | None


@dataclass
class SourceCounts:
    """What the log shows of one source: rewarded decisions where it offered a tip
    (`offered`), where its tip was served (`served`), and those rewards' plain sum."""

    offered: int = 0
    served: int = 0
    served_reward: float = 0.0


def key_of(fields: SourceFields) -> str:
    """The source a candidate counts under (`policy_service.source_key`)."""
    if not fields:
        return UNKNOWN_SOURCE
    return source_key(fields.get("model"), fields.get("prompt_version"))


def pair_name(a: str, b: str) -> str:
    """The name of the contrast `a` − `b`."""
    return f"{a} − {b}"


@dataclass
class SourceTargets:
    """Adds each source's target to chunks of traffic (`__call__`), counting what it sees.

    `only`: the sources to make targets of (None: every source met). `paired`: while at most
    that many sources have been met, each new one's contrast with every earlier one is added
    to `pairs` (as evaluate reads them, chunk by chunk) before its first chunk is handed on.
    """

    only: Collection[str] | None = None
    paired: int = 0
    pairs: dict[str, tuple[str, str]] = field(default_factory=dict)
    counts: dict[str, SourceCounts] = field(default_factory=dict)
    runs: dict[str, SourceRun] = field(default_factory=dict)
    _keys: dict[tuple[Any, Any], str] = field(default_factory=dict)

    def __call__(self, chunk: Traffic) -> Traffic:
        codes, names = self._codes(chunk)
        targets: dict[str, np.ndarray] = {}
        shown = codes[np.arange(chunk.n), chunk.chosen]
        for code, name in enumerate(names):
            mine = codes == code
            present = mine.any(axis=1)
            if name not in self.counts and len(self.counts) < self.paired:
                self.pairs |= {pair_name(name, other): (name, other) for other in self.counts}
            counts = self.counts.setdefault(name, SourceCounts())
            counts.offered += int(present.sum())
            served = shown == code
            counts.served += int(served.sum())
            counts.served_reward += float(chunk.reward[served].sum())
            if self.only is None or name in self.only:
                targets[name] = _target(chunk.logging, mine, present)
        return replace(chunk, targets=targets)

    def _key(self, fields: SourceFields) -> str:
        if not fields:
            return UNKNOWN_SOURCE
        pair = (fields.get("model"), fields.get("prompt_version"))
        key = self._keys.get(pair)
        if key is None:
            key = self._keys[pair] = key_of(fields)
        run_id = fields.get("run_id")
        if isinstance(run_id, str) and run_id not in self.runs:
            self.runs[run_id] = SourceRun(run_id, fields.get("experiment"), *pair)
        return key

    def _codes(self, chunk: Traffic) -> tuple[np.ndarray, list[str]]:
        """(n, K) each candidate's source index (-1 on the padding), and the sources."""
        index: dict[str, int] = {}
        codes = np.full(chunk.mask.shape, -1, dtype=np.int64)
        sources = chunk.sources or tuple((None,) * len(c) for c in chunk.categories)
        for row, fields in enumerate(sources):
            for k, found in enumerate(fields):
                codes[row, k] = index.setdefault(self._key(found), len(index))
        return codes, list(index)


def _target(p: np.ndarray, mine: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(n, K) π_S: the logging probabilities renormalised over S's candidates (see the
    module); NaN rows where S offered nothing."""
    mass = (p * mine).sum(axis=1, keepdims=True)
    reachable = mass > 0
    pi = np.where(mine, np.divide(p, mass, out=np.zeros_like(p), where=reachable), 0.0)
    unreachable = present & ~reachable[:, 0]
    if unreachable.any():  # the logger could not show S's tips: evaluate says "no overlap"
        spread = mine[unreachable] / mine[unreachable].sum(axis=1, keepdims=True)
        pi[unreachable] = spread
    pi[~present] = np.nan
    return pi
