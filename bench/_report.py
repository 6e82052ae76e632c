"""How the benchmarks summarise their rounds: best-round ratios, percentiles, the arms table.

Other work on the machine only ever adds time, so each side's best round is its least
disturbed one: verdicts compare best with best (`best_ratio`), and the median of the
per-round ratios (`median_ratio`) is printed beside them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ARM_LABELS = {
    "u": "(u) unconstrained",
    "s": "(s) schema, every request",
    "t": "(t) schema, shortlist grammar",
    "a": "(a) replay of (b)'s requests",
    "b": "(b) tipbench collect (auto)",
    "b1": "(b1) collect, first in its home",
    "bs": "(b:schema) collect, schema",
    "bo": "(b:off) collect, free only",
    "b0": "(b0) collect, no GenAI records",
}


@dataclass(frozen=True)
class ArmResult:
    """What one arm generated: wall clock, time inside the requests, tokens, usable cells."""

    seconds: float
    request_seconds: float
    tokens: int
    full: int  # cells whose (final) answer parses into n_tips tips
    cells: int
    requests: int = 0  # generation requests the arm made (collect's probe included)
    tips: int = 0  # usable tips the arm delivered, over every cell (collect's arms)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.request_seconds if self.request_seconds else 0.0

    @property
    def seconds_per_tip(self) -> float:
        """Wall clock per usable tip delivered: how a mode that leaves cells short compares."""
        return self.seconds / self.tips if self.tips else float("inf")


def best_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """b/a from each side's best (smallest) round."""
    return min(b) / min(a)


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of the per-round ratios b/a (the rounds paired in order)."""
    return statistics.median(y / x for x, y in zip(a, b, strict=True))


def spread(a: Sequence[float], b: Sequence[float]) -> str:
    """The per-round ratios b/a: median [min, max]."""
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"


def percentile(values: Sequence[float], q: float) -> float:
    """The `q` quantile (0–1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def print_default_bars(rounds: Sequence[Mapping[str, ArmResult]]) -> None:
    """Issue 46, item 3: the default against `--structured schema` on equal work, and
    against free-only in seconds per usable tip (free-only leaves cells short), for a later
    collect (b), whose path is remembered, and a first one in a fresh home (b1): medians of
    the per-round ratios with their range, target ≤ 1.05 each (printed)."""
    for key, which in (("b", "remembered path"), ("b1", "first collect, fresh home")):
        if key not in rounds[0]:
            continue
        mine = [r[key].seconds for r in rounds]
        schema = median_ratio([r["bs"].seconds for r in rounds], mine)
        print(
            f"({key})/(b:schema), {which}: {spread([r['bs'].seconds for r in rounds], mine)}"
            f"   target median ≤ 1.05   {'met' if schema <= 1.05 else 'NOT met'}"
        )
        per_tip = [r[key].seconds_per_tip for r in rounds]
        free = [r["bo"].seconds_per_tip for r in rounds]
        ratio = median_ratio(free, per_tip)
        print(
            f"({key})/(b:off) seconds per usable tip, {which}: {spread(free, per_tip)}"
            f"   target median ≤ 1.05   {'met' if ratio <= 1.05 else 'NOT met'}"
            f"   (tips {[r[key].tips for r in rounds]} against {[r['bo'].tips for r in rounds]})"
        )


def print_arms(
    rounds: Sequence[Mapping[str, ArmResult]], paths: Sequence[Mapping[str, int]]
) -> None:
    """Generation at the backend's own speed (issues 10 and 24). Each arm's best round
    (least disturbed), tokens/s over the time inside the requests, (b)'s generation paths
    per round, and the targets (printed, never part of an exit status): wall-clock ratios as
    the median of the per-round ratios with their range."""
    print(
        f"{'arm':<32} {'wall s':>8} {'in requests s':>14} {'tokens':>7} {'tokens/s':>9}"
        f" {'cells with n_tips':>18}"
    )
    best: dict[str, ArmResult] = {}
    for key, label in ARM_LABELS.items():
        if key not in rounds[0]:
            continue  # an arm this benchmark does not run
        arm = min((r[key] for r in rounds), key=lambda x: x.seconds)
        best[key] = arm
        print(
            f"{label:<32} {arm.seconds:>8.2f} {arm.request_seconds:>14.2f} {arm.tokens:>7}"
            f" {arm.tokens_per_s:>9.1f} {f'{arm.full}/{arm.cells}':>12}"
            f" {arm.full / max(arm.cells, 1):>5.0%}"
        )
    names = sorted({p for counts in paths for p in counts})
    print(
        "(b) generation paths: "
        + ", ".join(f"{p} {[counts.get(p, 0) for counts in paths]}" for p in names)
    )
    print(
        "requests per round: "
        + ", ".join(
            f"{ARM_LABELS[key].split()[0]} {[r[key].requests for r in rounds]}"
            for key in ARM_LABELS
            if key in rounds[0]
        )
    )

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    def per_round(key: str) -> list[float]:
        return [r[key].seconds for r in rounds]

    if "b" not in best:
        return
    share = best["b"].full / max(best["b"].cells, 1)
    print(f"(b) cells with n_tips tips:   {share:.1%}   target ≥ 95%    {verdict(share >= 0.95)}")
    if "u" in best:
        speed = best["b"].tokens_per_s / best["u"].tokens_per_s
        met = verdict(speed >= 0.9)
        print(f"(b)/(u) tokens/s:             {speed:.3f}   target ≥ 0.90   {met}")
    if "a" in best:  # issue 24: medians over rounds, with their spread
        overhead = median_ratio(per_round("a"), per_round("b"))
        print(
            f"(b)/(a) wall clock:           {spread(per_round('a'), per_round('b'))}"
            f"   target median ≤ 1.05   {verdict(overhead <= 1.05)}"
        )
    if "bs" in best and "bo" in best:
        faster = [min(r["bs"].seconds, r["bo"].seconds) for r in rounds]
        default = median_ratio(faster, per_round("b"))
        print(
            f"(b)/faster of (b:schema), (b:off): {spread(faster, per_round('b'))}"
            f"   target median ≤ 1.05   {verdict(default <= 1.05)}"
        )
        print_default_bars(rounds)
    for key in ("bs", "bo"):
        if key in best:
            label = ARM_LABELS[key].split()[0]
            print(f"(b)/{label} wall clock: {spread(per_round(key), per_round('b'))}")
    for key, what in (("s", "every request constrained, as before"), ("t", "schema, shortlist")):
        if key in best and "u" in best:
            cost = best[key].tokens_per_s / best["u"].tokens_per_s
            print(
                f"({key})/(u) tokens/s:             {cost:.3f}   (what the grammar costs per "
                f"token: {what}); (b)/({key}) wall {best['b'].seconds / best[key].seconds:.3f}"
            )
