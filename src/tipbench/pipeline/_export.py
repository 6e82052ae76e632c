"""Exporting the runs that wait for the human judge, in the experiment's judging order.

`judge export`, `tipbench run` and the Airflow DAG all export through here: the experiment's
judging order (`compare.judging_state`, started if none) orders the file, each item records
its inclusion probability in it, and the export says how the judging stands (the combined
tier's message).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipbench.human_tier import (
    ExportResult,
    JudgingOrder,
    JudgingStatus,
    Order,
    export_pending,
    inclusion_at_turn,
    judging_state,
    judging_status,
)
from tipbench.human_tier import serving_order as order_of
from tipbench.tracking import TrackingStore


@dataclass(frozen=True)
class JudgeExport:
    """What an export wrote, in which judging order, and how the judging stands."""

    result: ExportResult
    order: JudgingOrder | None
    status: JudgingStatus

    def describe(self) -> str:
        """`in the experiment's active order since …; about 12 more judgments expected;
        8 scenarios: the gate can detect a gap of about …`."""
        said = [self.status.message, self.status.detectable]
        if self.order is not None:
            said.insert(0, f"in the experiment's {self.order.describe()}")
        return "; ".join(part for part in said if part)


def export_in_order(
    store: TrackingStore,
    experiment: str,
    out: Path,
    *,
    reveal: bool = False,
    seed: int | None = None,
    order: Order | None = None,
) -> JudgeExport:
    """Write the pending runs to a judge file, listed in the experiment's judging order.

    Args:
        store: The MLflow store.
        experiment: The experiment's name.
        out: The judge file (scores already in it are carried over).
        reveal: Show models and prompts, in run-name order: the judge then chooses, and the
            runs scored out of the order's turn wait (`judging.queue_inclusion`).
        seed: The seed of the candidates' shuffle (default: the file's, else random).
        order: The judging order wanted (see `compare.ensure_order`).

    Raises:
        ConfigError: The file cannot be overwritten without losing scores.
        TrackingError: The store cannot be read or the order recorded.
    """
    state = judging_state(store, experiment, order)
    listed = [] if reveal else order_of(state)
    result = export_pending(
        store,
        experiment,
        out,
        reveal=reveal,
        seed=seed,
        order=listed,
        inclusion=inclusion_at_turn(state),
    )
    return JudgeExport(result, state.order, judging_status(state))
