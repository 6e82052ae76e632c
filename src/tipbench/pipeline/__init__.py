"""The whole pipeline in one call: collect → auto judge → export for the human → compare.

Its phases are public too (`judge_grid`, `rank`), for callers that run them one at a time
(the Airflow DAGs).
"""

from tipbench.pipeline._run import (
    PipelineResult,
    Ranking,
    default_export_path,
    judge_grid,
    rank,
    run_pipeline,
)

__all__ = ["PipelineResult", "Ranking", "default_export_path", "judge_grid", "rank", "run_pipeline"]
