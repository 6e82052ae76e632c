"""The whole pipeline in one call: collect → auto judge → export for the human → compare."""

from tipbench.pipeline._run import PipelineResult, default_export_path, run_pipeline

__all__ = ["PipelineResult", "default_export_path", "run_pipeline"]
