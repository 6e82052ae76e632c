"""Where each cell of a leaderboard stands: its rank and its class, with their colours and words.

This module is the one home of that classification. Every view of a leaderboard (the terminal
table, JSON, CSV, Markdown, the PNG chart, the admin API and the bench panel) shows the
`Standing` the leaderboard computed, in the colour and words of `STANDINGS`; none derives it.

Ranks follow the evidence, not names: the cells that no other cell is significantly ahead of
share rank 1 (shown `1=` when there are several); below them, cells follow by mean composite
(equal means share a rank). "Significantly ahead" means the paired comparison's verdict is
"different" (the test is significant and the interval excludes 0); in the combined tier,
whose comparisons carry an anytime-valid confidence sequence, that the sequence excludes 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tipbench.stats import PairedComparison, verdict

Standing = Literal["leader", "tied", "undecided", "behind", "too little data"]
"""A cell against the leader (the ranked cell with the highest mean composite):

- "leader": that cell;
- "tied": not different from the leader (the test is not significant, the interval holds 0,
  and enough scenarios are paired for the test to have been able to tell), and no other cell
  is significantly ahead of it: it shares rank 1;
- "undecided": no cell is significantly ahead of it, but the comparison with the leader is
  inconclusive (too few paired scenarios, or test and interval disagree): it shares rank 1,
  and nobody can say whether it is behind;
- "behind": some cell (the leader or another) is significantly ahead of it;
- "too little data": judged on fewer scenarios than the leaderboard's minimum: not ranked.
"""

FIRST: frozenset[Standing] = frozenset({"leader", "tied"})
"""The standings that are first on the evidence (what the promotion gate needs)."""


@dataclass(frozen=True)
class StandingStyle:
    """How a standing is shown: its word, colour and legend entry, and a word of at most
    nine characters for narrow tables."""

    label: str
    colour: str
    legend: str
    short: str = ""

    @property
    def compact(self) -> str:
        return self.short or self.label


STANDINGS: dict[Standing, StandingStyle] = {
    "leader": StandingStyle("leader", "#d9822b", "leader: the highest mean composite"),
    "tied": StandingStyle(
        "tied", "#f2c18f", "tied with the leader: not significantly different, shares rank 1"
    ),
    "undecided": StandingStyle(
        "undecided",
        "#b9aed6",
        "undecided: too little evidence to tell whether it is behind the leader",
    ),
    "behind": StandingStyle(
        "behind", "#2f6f9f", "behind: another cell is significantly ahead of it"
    ),
    "too little data": StandingStyle(
        "too little data", "#c8c8c8", "too little judged data: not ranked", "unranked"
    ),
}
"""Every standing's word, colour and legend entry, in the legend's order."""

LEGEND: tuple[tuple[str, str], ...] = tuple((s.colour, s.legend) for s in STANDINGS.values())
"""Each bar colour with what it means, as the chart's and the panel's legends say it."""


@dataclass(frozen=True)
class Placing:
    """A ranked cell's place: its rank, whether another cell shares it, and its standing.

    `vs_leader` is the comparison with the leader (None for the leader itself).
    """

    rank: int
    shared: bool
    standing: Standing
    vs_leader: PairedComparison | None


def rank_text(rank: int | None, shared: bool) -> str:
    """A rank as tables show it: `1`, `1=` when shared, `–` when not ranked."""
    if rank is None:
        return "–"
    return f"{rank}=" if shared else str(rank)


def _ahead(comparison: PairedComparison, alpha: float) -> bool:
    """The comparison (this cell minus the other) shows the other significantly ahead: its
    confidence sequence lies below 0 where it has one (the combined tier: valid however
    often the leaderboard is looked at), else the single-look verdict is "different"."""
    if comparison.sequence is not None and comparison.anytime:
        return comparison.sequence.high < 0.0
    return verdict(comparison, alpha) == "different" and comparison.difference.value < 0


def place(
    means: Sequence[float],
    compare: Callable[[int, int], PairedComparison],
    alpha: float,
) -> list[Placing]:
    """Rank the cells and classify each against the leader.

    Args:
        means: The ranked cells' means, highest first (index 0 is the leader); ties in any
            order (the result does not depend on it but for which tied cell is the leader).
        compare: ``compare(i, j)`` is the paired comparison of cell ``j`` with cell ``i``
            (``j`` minus ``i``), for ``i < j``. It is called only where needed: with every
            cell for the leader, with the cells above it for a cell not behind the leader.
        alpha: Significance level.

    Returns:
        One placing per cell, in the order of `means`.
    """
    if not means:
        return []
    versus: list[PairedComparison | None] = [None]
    standings: list[Standing] = ["leader"]
    for j in range(1, len(means)):
        vs = compare(0, j)
        versus.append(vs)
        behind = _ahead(vs, alpha) or any(_ahead(compare(i, j), alpha) for i in range(1, j))
        if behind:
            standings.append("behind")
        else:
            standings.append("tied" if verdict(vs, alpha) == "not different" else "undecided")
    first = sum(1 for s in standings if s != "behind")
    behind_means = [m for m, s in zip(means, standings, strict=True) if s == "behind"]
    ranks = [
        1 if s != "behind" else first + 1 + sum(1 for other in behind_means if other > m)
        for m, s in zip(means, standings, strict=True)
    ]
    return [
        Placing(rank, ranks.count(rank) > 1, standing, vs)
        for rank, standing, vs in zip(ranks, standings, versus, strict=True)
    ]


def is_first(standing: Standing | None) -> bool:
    """Whether a standing is first on the evidence: the leader, or tied with it."""
    return standing in FIRST
