"""The optimization's chart: the best mean training score per iteration.

matplotlib is imported here only, when the chart is drawn, with the Agg backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tipbench.suite import COMPOSITE_RANGE


def plot_progress(
    points: Sequence[tuple[int, float]], start: float, title: str, path: Path
) -> Path:
    """Draw the best mean training score (`(iteration, score)` points) as steps, with the
    start's score as a dashed line, into a PNG at `path`; return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, axis = plt.subplots(figsize=(7.0, 3.6), layout="constrained")
    if points:
        iterations, scores = zip(*sorted(points), strict=True)
        axis.step(iterations, scores, where="post", marker="o", color="#d95f02", label="best")
    axis.axhline(start, linestyle="--", color="#7570b3", label="start")
    axis.set_xlabel("iteration")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    low, high = COMPOSITE_RANGE
    axis.set_ylabel(f"mean training composite ({low:g}–{high:g})")
    axis.set_title(title, fontsize=11, loc="left")
    axis.text(
        1.0,
        -0.22,
        "training scores only: judge the shortlist on held-out scenarios",
        transform=axis.transAxes,
        ha="right",
        fontsize=8,
        color="#555555",
    )
    axis.legend(frameon=False, fontsize=9)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
