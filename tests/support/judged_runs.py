"""Judged cell runs written straight into an MLflow store, for tests and benchmarks.

A `JudgedCell` holds what collect and the judge tiers would have left on one cell run: the
params and tags of a successful cell and, per tier, the scores contract of
`tipbench.judge._scores` (run metrics, compact scores tag, version and judge tags). Writing
one takes three MLflow calls (create, one `log_batch`, terminate) instead of a real grid and
a real judge, so a test can set the exact scores it reasons about.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from tipbench.collect import CANDIDATES_FILE
from tipbench.judge._scores import (
    Scores,
    Tier,
    encode_scores,
    judged_at_tag,
    judged_by_tag,
    run_metrics,
    scores_tag,
    version_tag,
)
from tipbench.suite import load_suite
from tipbench.tracking import KIND_CELL, KIND_TAG, log_texts

JUDGED_AT = "2026-01-01T00:00:00+00:00"


@functools.cache
def _rubric_text() -> str:
    return load_suite().rubric.text()


def scores(*rows: Sequence[int]) -> dict[str, Scores]:
    """`scores((4, 3, 5, 1, 0), ...)` → `{"c1": Scores(4, 3, 5, 1, 0), ...}`."""
    return {f"c{i}": Scores(*row) for i, row in enumerate(rows, start=1)}


def uniform(composite: int, n: int = 2) -> dict[str, Scores]:
    """`n` candidates that each score `composite` (5 ≤ composite ≤ 17, format_ok=1)."""
    if not 5 <= composite <= 17:
        raise ValueError(f"composite {composite} cannot be made with format_ok=1, overlong=0")
    rest = composite - 2
    r = min(5, rest - 2)
    a = min(5, rest - r - 1)
    t = rest - r - a
    return scores(*[(r, a, t, 1, 0)] * n)


@dataclass(frozen=True)
class JudgedCell:
    """One successful cell run and the scores of the tiers that judged it."""

    model: str
    prompt_version: str
    scenario_id: str
    human: dict[str, Scores] | None = None
    auto: dict[str, Scores] | None = None
    n_candidates: int = 0  # 0: as many as the tiers scored (else 2)

    @property
    def candidate_count(self) -> int:
        if self.n_candidates:
            return self.n_candidates
        scored = self.human or self.auto
        return len(scored) if scored else 2

    def run_name(self) -> str:
        return f"{self.model}|{self.prompt_version}|{self.scenario_id}"

    def tags(self) -> dict[str, str]:
        tags = {
            KIND_TAG: KIND_CELL,
            "cell_status": "ok",
            "cell_key": self.run_name(),
            "rubric": "tip-v1",
            "judge_pending": "false" if self.human else "true",
        }
        for tier, tier_scores in self.tiers():
            tags |= {
                scores_tag(tier): encode_scores(tier_scores),
                version_tag(tier): "1",
                judged_at_tag(tier): JUDGED_AT,
                judged_by_tag(tier): "judge-fixture" if tier == "human" else "auto-fixture",
            }
            if tier == "human":
                tags["judge_kind"] = "human"
        return tags

    def params(self) -> dict[str, str]:
        return {
            "model": self.model,
            "backend": self.model.split(":", 1)[0],
            "prompt_version": self.prompt_version,
            "scenario_id": self.scenario_id,
        }

    def metrics(self, timestamp_ms: int) -> list[Metric]:
        """Collect's metrics at step 0; each tier's scores at step 1 (their first version)."""
        metrics = [
            Metric("candidate_count", float(self.candidate_count), timestamp_ms, 0),
            Metric("parse_success", 1.0, timestamp_ms, 0),
        ]
        for tier, tier_scores in self.tiers():
            metrics += [
                Metric(k, v, timestamp_ms, 1) for k, v in run_metrics(tier, tier_scores).items()
            ]
        return metrics

    def tiers(self) -> list[tuple[Tier, dict[str, Scores]]]:
        found: list[tuple[Tier, dict[str, Scores]]] = []
        if self.human:
            found.append(("human", self.human))
        if self.auto:
            found.append(("auto", self.auto))
        return found

    def candidates_document(self) -> str:
        """A `candidates.json` like collect's, for exporting the run to a judge file."""
        return json.dumps(
            {
                "cell_key": self.run_name(),
                "scenario": {"id": self.scenario_id},
                "parse_method": "json",
                "candidates": [
                    {"id": f"c{i}", "text": f"Tip {i} for {self.scenario_id}.",
                     "format_ok": 1, "overlong": 0}
                    for i in range(1, self.candidate_count + 1)
                ],
            }
        )  # fmt: skip


def write_cells(
    client: MlflowClient,
    experiment_id: str,
    cells: Iterable[JudgedCell],
    with_candidates: bool = False,
) -> list[str]:
    """Write each cell as one finished MLflow run; return the run ids in order.

    Args:
        client: The store's client.
        experiment_id: Where the runs go.
        cells: The cells, with their tiers' scores.
        with_candidates: Also log `candidates.json` and `rubric.md`, as collect does (needed
            to export the runs for judging).
    """
    run_ids: list[str] = []
    now = int(time.time() * 1000)
    for cell in cells:
        run = client.create_run(experiment_id, start_time=now, run_name=cell.run_name())
        run_id: str = run.info.run_id
        client.log_batch(
            run_id,
            metrics=cell.metrics(now),
            params=[Param(k, v) for k, v in cell.params().items()],
            tags=[RunTag(k, v) for k, v in cell.tags().items()],
        )
        if with_candidates:
            files = {CANDIDATES_FILE: cell.candidates_document(), "rubric.md": _rubric_text()}
            log_texts(client, run_id, files)
        client.set_terminated(run_id, "FINISHED", end_time=now)
        run_ids.append(run_id)
    return run_ids
