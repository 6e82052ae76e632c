"""The whole pipeline in one call: collect → auto judge → export for the human → compare.

`RunRequest` is a run's conf (the keys of SPEC §7), shared by the admin API and the Airflow
DAG. Its phases are public too (`judge_grid`, `rank`), for callers that run them one at a
time (the Airflow DAGs). They load on first use, so that the request imports without the
judge and compare libraries (the DAG file stays cheap to parse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tipbench.pipeline._request import MAX_MODELS, MAX_NAME_CHARS, MAX_PROMPTS, RunRequest

if TYPE_CHECKING:
    from tipbench.pipeline._export import JudgeExport, export_in_order
    from tipbench.pipeline._run import (
        PipelineResult,
        Ranking,
        default_export_path,
        judge_grid,
        never_promotes,
        rank,
        run_pipeline,
    )
    from tipbench.pipeline._scores import AfterScores, Announce, scores_written

__all__ = [
    "MAX_MODELS",
    "MAX_NAME_CHARS",
    "MAX_PROMPTS",
    "AfterScores",
    "Announce",
    "JudgeExport",
    "PipelineResult",
    "Ranking",
    "RunRequest",
    "default_export_path",
    "export_in_order",
    "judge_grid",
    "never_promotes",
    "rank",
    "run_pipeline",
    "scores_written",
]

_RUN_NAMES = frozenset(
    {
        "PipelineResult",
        "Ranking",
        "default_export_path",
        "judge_grid",
        "never_promotes",
        "rank",
        "run_pipeline",
    }
)


def __getattr__(name: str) -> Any:
    if name in _RUN_NAMES:
        from tipbench.pipeline import _run

        return getattr(_run, name)
    if name in ("JudgeExport", "export_in_order"):
        from tipbench.pipeline import _export

        return getattr(_export, name)
    if name in ("AfterScores", "Announce", "scores_written"):
        from tipbench.pipeline import _scores

        return getattr(_scores, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
