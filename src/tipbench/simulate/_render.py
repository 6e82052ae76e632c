"""The simulation report as text: the overall table, the paired differences against the live
policy, the per-persona table and the learning curve."""

from __future__ import annotations

from tipbench.simulate._report import SimulationReport
from tipbench.stats import Estimate, PairedComparison, pairs_needed


def paired_interval(c: PairedComparison) -> str:
    """The interval of a paired difference, `[+0.0114, +0.0257]`; below the seeds an exact
    interval needs (`compare.pairs_needed`: 6 at 95%), a note saying so instead of NaN."""
    d = c.difference
    if not d.has_interval:
        needed = pairs_needed(1 - d.confidence)
        return f"(no {d.confidence:.0%} interval from {c.n_pairs} seeds: {needed} needed)"
    return f"[{d.low:+.4f}, {d.high:+.4f}]"


def over_seeds_text(e: Estimate) -> str:
    """A figure over seeds, `0.3832 [0.3735, 0.3933]`; `0.3832 (no interval)` below the
    seeds an interval needs (the paired column says how many)."""
    return e.text() if e.has_interval else f"{e.value:.4f} (no interval)"


def render_report(report: SimulationReport, header: str) -> list[str]:
    """Lines of text for a terminal (95% intervals over seeds in brackets)."""
    width = max(len(p.policy) for p in report.policies) + 9
    lines = [
        header,
        "",
        f"{'policy':<{width}}{'mean reward':<27}{'regret':<9}{'completed':<11}{'dismissed':<11}"
        "vs live (paired by seed)",
    ]
    for p in report.policies:
        name = f"{p.policy} (live)" if p.policy == report.live else p.policy
        vs = p.vs_live
        versus = (
            "—"
            if vs is None
            else f"{vs.difference.value:+.4f} {paired_interval(vs)} p = {vs.p_value:.4g}"
        )
        o = p.overall
        lines.append(
            f"{name:<{width}}{over_seeds_text(o['reward']):<27}{o['regret'].value:<9.4f}"
            f"{o['completion'].value:<11.3f}{o['dismiss'].value:<11.3f}{versus}"
        )
    lines.append(f"{'oracle':<{width}}{over_seeds_text(report.oracle):<27}(knows the true model)")
    personas = list(dict.fromkeys(k for p in report.policies for k in p.per_persona))
    lines += [
        "",
        "mean reward per persona:",
        f"{'persona':<14}" + "".join(f"{p.policy:>14}" for p in report.policies),
    ]
    for persona in personas:
        cells = []
        for p in report.policies:
            e = p.per_persona.get(persona, {}).get("reward")
            cells.append(f"{e.value:>14.4f}" if e is not None else f"{'—':>14}")
        lines.append(f"{persona:<14}" + "".join(cells))
    lines += [
        "",
        "learning curve (mean reward by day):",
        f"{'day':<14}" + "".join(f"{p.policy:>14}" for p in report.policies),
    ]
    for day in range(report.days):
        lines.append(
            f"{day + 1:<14}" + "".join(f"{p.per_day[day].value:>14.4f}" for p in report.policies)
        )
    return lines
