"""What follows newly written scores: the announcement is the caller's to make (issue 33,
item 4: the pipeline no longer imports orchestration, which runs it)."""

from __future__ import annotations

from support.judged_experiment import make_judged_experiment
from tipbench.pipeline import AfterScores, scores_written


class Listener:
    """An announcement hook that records what it was told and answers with a warning."""

    def __init__(self, warning: str | None) -> None:
        self.told: list[tuple[str, str | None]] = []
        self.warning = warning

    def __call__(self, experiment: str, tracking_uri: str | None) -> str | None:
        self.told.append((experiment, tracking_uri))
        return self.warning


def test_complete_scores_are_announced_through_the_callers_hook(
    sqlite_uri: str, experiment: str
) -> None:
    judged = make_judged_experiment(sqlite_uri, experiment)
    listener = Listener("Airflow was not told about the new scores: refused")
    after = scores_written(judged.store, experiment, final=True, announce=listener)
    assert listener.told == [(experiment, judged.store.uri)]
    assert after.warnings == ["Airflow was not told about the new scores: refused"]


def test_drafts_are_announced_to_nobody(sqlite_uri: str, experiment: str) -> None:
    judged = make_judged_experiment(sqlite_uri, experiment)
    listener = Listener(None)
    after = scores_written(judged.store, experiment, final=False, announce=listener)
    assert (listener.told, after) == ([], AfterScores())


def test_without_a_hook_nobody_is_told_and_nothing_warns(sqlite_uri: str, experiment: str) -> None:
    judged = make_judged_experiment(sqlite_uri, experiment)
    assert scores_written(judged.store, experiment, final=True).warnings == []
