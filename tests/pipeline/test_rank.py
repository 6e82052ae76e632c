"""The ranking phase of `tipbench run`: a chart that cannot be saved never costs the rest."""

from __future__ import annotations

from pathlib import Path

from support.judged_experiment import make_judged_experiment
from tipbench.pipeline._run import rank


def test_a_chart_that_cannot_be_saved_is_a_warning(
    sqlite_uri: str, experiment: str, tmp_path: Path
) -> None:
    judged = make_judged_experiment(sqlite_uri, experiment)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    ranking = rank(judged.store, experiment, plot=blocker / "chart.png")
    assert ranking.chart is None and ranking.run_id is not None  # still ranked and logged
    assert [board.tier for board in ranking.boards] == ["human", "auto"]
    [warning] = ranking.warnings
    assert warning.startswith(f"chart not saved to {blocker / 'chart.png'}: ")

    made = tmp_path / "new" / "folder" / "chart.png"  # a missing folder is made
    assert rank(judged.store, experiment, plot=made).chart == made and made.is_file()
