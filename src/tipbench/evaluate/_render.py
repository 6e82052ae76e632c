"""The evaluation report as text: each deciding policy's observed reward, then every evaluated
policy's estimates (or why there are none), with the clip and the logging floor that bound
the weights."""

from __future__ import annotations

import math

from tipbench.evaluate._estimators import BIASED_CLIP_SHARE, ESTIMATORS
from tipbench.evaluate._evaluate import EvaluationReport
from tipbench.stats import Estimate

WIDTH = 28  # an estimate's column


def estimate_text(estimate: Estimate) -> str:
    """`0.4120 [0.4011, 0.4229]`, or, without an interval, why: `1.0000 (1 decision: no
    interval)`."""
    if estimate.has_interval:
        return estimate.text()
    noun = "decision" if estimate.n == 1 else "decisions"
    return f"{estimate.value:.4f} ({estimate.n} {noun}: no interval)"


def weights_line(report: EvaluationReport) -> str:
    """What bounds the importance weights: the clip, and the smallest logged probability."""
    line = f"importance weights π/p clipped at {report.clip:g}"
    if math.isfinite(report.floor):
        line += (
            f"; the smallest probability logged (the logging floor) is {report.floor:.3g}: "
            f"weights up to {1 / report.floor:,.0f}"
        )
    return line


def render_evaluation(report: EvaluationReport) -> list[str]:
    """Lines of text for a terminal (95% intervals in brackets)."""
    lines = [
        f"{report.decisions:,} logged decisions, {report.rewarded:,} rewarded; "
        f"live: {report.live or 'none'}",
        weights_line(report),
    ]
    if report.score_left_out:
        lines.append(
            f"({report.score_left_out:,} /score decisions left out: made by the policy named, "
            "not the live one; --include-score counts them)"
        )
    lines += [
        "",
        "observed (each policy's own decisions):",
    ]
    for o in report.observed:
        lines.append(
            f"  {o.policy:<14}{estimate_text(o.value):<{WIDTH}}{o.decisions:>10,} decisions"
        )
    if not report.observed:
        lines.append("  nothing rewarded yet")
    lines += ["", "off-policy estimates of the mean reward:"]
    header = f"  {'policy':<14}{'source':<10}" + "".join(
        f"{e.upper():<{WIDTH}}" for e in ESTIMATORS
    )
    lines.append(header + f"{'ESS':>9}{'clipped':>9}{'decisions':>11}")
    biased = False
    for p in report.policies:
        if p.status != "estimated":
            lines.append(f"  {p.policy:<14}{p.source:<10}{p.status}: {p.reason}")
            continue
        cells = "".join(
            f"{p.estimates[e].text() if e in p.estimates else 'biased: clipped':<{WIDTH}}"
            for e in ESTIMATORS
        )
        biased = biased or bool(p.biased)
        lines.append(
            f"  {p.policy:<14}{p.source:<10}{cells}{p.ess:>9.1f}{p.clipped:>9.1%}{p.decisions:>11,}"
        )
    if biased:
        lines.append(
            f"  (biased: clipped: the clip cut more than {BIASED_CLIP_SHARE:.1%} of the policy's "
            "importance weight, which biases IPS and SNIPS down; DR corrects only the reward "
            "model's residuals and keeps its estimate)"
        )
    if report.versus_live:
        lines += ["", f"DR minus {report.live}'s observed reward, on its decisions:"]
        for c in report.versus_live:
            if c.difference is None:
                lines.append(f"  {c.policy:<14}no shared decision")
            else:
                d = c.difference
                lines.append(
                    f"  {c.policy:<14}{d.value:+.4f} [{d.low:+.4f}, {d.high:+.4f}] "
                    f"over {c.decisions:,} decisions"
                )
    return lines
