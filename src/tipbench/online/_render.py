"""The online tier as text lines (`compare --tier online`) and as one JSON document (the same
figures: the CLI's `--format json`, the admin API)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tipbench.online._agreement import Agreement
from tipbench.online._tier import OnlineRow, OnlineTier
from tipbench.stats import CONFIDENCE, Estimate, json_numbers

_HEADER = (
    "rank",
    "source",
    "standing",
    "value (DR)",
    "vs leader",
    "SNIPS",
    "ESS",
    "offered",
    "served",
)


def _estimate(e: Estimate | None, *, signed: bool = False) -> str:
    if e is None:
        return "–"
    return e.text(4, signed=signed) if e.has_interval else f"{e.value:.4f} (no interval)"


def _cells(row: OnlineRow) -> tuple[str, ...]:
    snips = "biased: clipped" if "snips" in row.biased else _estimate(row.snips)
    return (
        "–" if row.rank is None else str(row.rank),
        row.source,
        row.standing,
        _estimate(row.value),
        _estimate(row.vs_leader, signed=True),
        snips if row.value is not None else "–",
        "–" if math.isnan(row.ess) else f"{row.ess:,.0f}",
        f"{row.decisions:,}",
        f"{row.served:,}",
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
        for r in (header, *rows)
    ]


def render_online(tier: OnlineTier, agreements: Sequence[Agreement] = ()) -> list[str]:
    """The tier's table, why each source without an estimate has none, and each agreement."""
    lines = [
        f"online tier: {tier.rewarded:,} rewarded decisions of {tier.decisions:,} "
        f"(live policy: {tier.live or 'none'}); each source's value of serving its tips, "
        f"doubly robust, {CONFIDENCE:.0%} intervals"
    ]
    if not tier.rows:
        return [*lines, "no rewarded decision in the log: nothing to estimate"]
    lines += _table(_HEADER, [_cells(r) for r in tier.rows])
    for row in tier.rows:
        if row.value is None:
            more = f"; about {row.more_needed:,} more decisions" if row.more_needed else ""
            lines.append(f"  {row.source}: {row.status}: {row.reason}{more}")
    for found in agreements:
        lines.append(
            f"does the {found.tier} tier's rubric predict what users do? "
            f"({len(found.sources)} sources with both; Spearman's rho)"
        )
        lines += _table(
            ("criterion", "rho", "verdict"),
            [(c.criterion, _estimate(c.rho, signed=True), c.verdict) for c in found.criteria],
        )
    return lines


def online_document(tier: OnlineTier, agreements: Sequence[Agreement] = ()) -> dict[str, Any]:
    document: dict[str, Any] = json_numbers(
        {**tier.to_dict(), "agreement": [a.to_dict() for a in agreements]}
    )
    return document
