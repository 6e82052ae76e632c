"""The evaluation report as text: each deciding policy's observed reward, then every evaluated
policy's estimates (or why there are none)."""

from __future__ import annotations

from tipbench.evaluate._estimators import ESTIMATORS
from tipbench.evaluate._evaluate import EvaluationReport


def render_evaluation(report: EvaluationReport) -> list[str]:
    """Lines of text for a terminal (95% intervals in brackets)."""
    lines = [
        f"{report.decisions:,} logged decisions, {report.rewarded:,} rewarded; "
        f"live: {report.live or 'none'}",
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
        lines.append(f"  {o.policy:<14}{o.value.text():<28}{o.decisions:>10,} decisions")
    if not report.observed:
        lines.append("  nothing rewarded yet")
    lines += ["", "off-policy estimates of the mean reward:"]
    header = f"  {'policy':<14}{'source':<10}" + "".join(f"{e.upper():<28}" for e in ESTIMATORS)
    lines.append(header + f"{'ESS':>9}{'clipped':>9}{'decisions':>11}")
    for p in report.policies:
        if p.status != "estimated":
            lines.append(f"  {p.policy:<14}{p.source:<10}{p.status}: {p.reason}")
            continue
        cells = "".join(f"{p.estimates[e].text():<28}" for e in ESTIMATORS)
        lines.append(
            f"  {p.policy:<14}{p.source:<10}{cells}{p.ess:>9.1f}{p.clipped:>9.1%}{p.decisions:>11,}"
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
