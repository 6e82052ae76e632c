"""Fixtures for the Airflow tests: one migrated AIRFLOW_HOME per session."""

from __future__ import annotations

import pytest

from support.airflow_home import AirflowHome


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> AirflowHome:
    """A temporary AIRFLOW_HOME (SQLite) with tipbench's DAGs installed by the CLI."""
    return AirflowHome(tmp_path_factory.mktemp("airflow")).setup()
