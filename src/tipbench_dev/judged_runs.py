"""Judged cell runs written straight into an MLflow store, for tests and benchmarks.

A `JudgedCell` holds what collect and the judge tiers would have left on one cell run: the
params and tags of a successful cell and, per tier, the scores. Their layout comes from the
library (`tipbench.tracking`: `CellRun.params`/`tags`, `score_fields`, `CandidatesFile`), so
a test reads back exactly what the library writes. Writing one takes three MLflow calls
(create, one `log_batch`, terminate) instead of a real grid and a real judge, so a test can
set the exact scores it reasons about.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from tipbench.suite import load_suite
from tipbench.tracking import (
    CANDIDATES_FILE,
    RUBRIC_FILE,
    CandidatesFile,
    CellMetric,
    CellParam,
    CellRun,
    RecordedCandidate,
    Scores,
    Tier,
    log_texts,
    score_fields,
)

JUDGED_AT = "2026-01-01T00:00:00+00:00"
#: The automatic judge the fixture runs name (a model spec, as `judge auto` records it).
AUTO_JUDGE = "openai:judge-fixture"


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
    structured: str | None = None  # collect's --structured mode; None: a run from before it

    @property
    def candidate_count(self) -> int:
        if self.n_candidates:
            return self.n_candidates
        scored = self.human or self.auto
        return len(scored) if scored else 2

    def run_name(self) -> str:
        return f"{self.model}|{self.prompt_version}|{self.scenario_id}"

    def layout(self) -> CellRun:
        """The cell as collect would have recorded it."""
        return CellRun(
            model=self.model,
            prompt_version=self.prompt_version,
            scenario_id=self.scenario_id,
            cell_key=self.run_name(),
            rubric="tip-v1",
            judge_pending=True,
            settings={} if self.structured is None else {CellParam.STRUCTURED: self.structured},
        )

    def tags(self) -> dict[str, str]:
        tags = self.layout().tags()
        for tier, tier_scores in self.tiers():
            tags |= score_fields(tier, tier_scores, _JUDGES[tier], 1, JUDGED_AT).tags
        return tags

    def params(self) -> dict[str, str]:
        return self.layout().params()

    def metrics(self, timestamp_ms: int) -> list[Metric]:
        """Collect's metrics at step 0; each tier's scores at step 1 (their first version)."""
        metrics = [
            Metric(CellMetric.CANDIDATE_COUNT, float(self.candidate_count), timestamp_ms, 0),
            Metric(CellMetric.PARSE_SUCCESS, 1.0, timestamp_ms, 0),
        ]
        for tier, tier_scores in self.tiers():
            fields = score_fields(tier, tier_scores, _JUDGES[tier], 1, JUDGED_AT)
            metrics += [
                Metric(k, v, timestamp_ms, fields.version) for k, v in fields.metrics.items()
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
        return CandidatesFile(
            cell_key=self.layout().cell_key,
            scenario={"id": self.scenario_id},
            parse_method="json",
            candidates=tuple(
                RecordedCandidate(
                    id=f"c{i}", text=f"Tip {i} for {self.scenario_id}.", format_ok=1, overlong=0
                )
                for i in range(1, self.candidate_count + 1)
            ),
        ).dump()


_JUDGES: dict[Tier, str] = {"human": "judge-fixture", "auto": AUTO_JUDGE}


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
            files = {CANDIDATES_FILE: cell.candidates_document(), RUBRIC_FILE: _rubric_text()}
            log_texts(client, run_id, files)
        client.set_terminated(run_id, "FINISHED", end_time=now)
        run_ids.append(run_id)
    return run_ids
