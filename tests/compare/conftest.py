"""Fixtures of the compare tests."""

from __future__ import annotations

import pytest

from support.judged_experiment import JudgedExperiment, make_judged_experiment


@pytest.fixture
def judged(sqlite_uri: str, experiment: str) -> JudgedExperiment:
    """The hand-worked experiment of `support.judged_experiment` in a fresh SQLite store."""
    return make_judged_experiment(sqlite_uri, experiment)
