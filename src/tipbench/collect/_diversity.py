"""How different a cell's candidates are from each other."""

from __future__ import annotations

import re
from itertools import combinations

_WORD = re.compile(r"[a-z0-9']+")


def diversity(tips: tuple[str, ...]) -> float:
    """Mean pairwise Jaccard distance of the tips' word sets: 0 = identical, 1 = disjoint."""
    words = [set(_WORD.findall(tip.lower())) for tip in tips]
    pairs = list(combinations(words, 2))
    if not pairs:
        return 0.0
    return sum(1 - len(a & b) / max(len(a | b), 1) for a, b in pairs) / len(pairs)
