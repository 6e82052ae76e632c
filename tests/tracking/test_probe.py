"""Whether a store has an experiment, known without MLflow (collect generates a new
experiment's first cells while MLflow opens): a real MLflow server asked over REST."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from support.servers import MlflowServer, free_port
from tipbench.tracking import experiment_is_new
from tipbench.tracking._probe import server_has_experiment


def test_a_server_says_which_experiments_it_has(
    mlflow_server: MlflowServer, experiment: str
) -> None:
    assert server_has_experiment(mlflow_server.url, experiment) is False
    assert experiment_is_new(mlflow_server.url, experiment)

    MlflowClient(mlflow_server.url).create_experiment(experiment)
    assert server_has_experiment(mlflow_server.url, experiment) is True
    assert not experiment_is_new(mlflow_server.url, experiment)


def test_a_name_is_sent_as_one_query_value(mlflow_server: MlflowServer, experiment: str) -> None:
    odd = f"{experiment} & name=x/y?#"
    MlflowClient(mlflow_server.url).create_experiment(odd)
    assert server_has_experiment(mlflow_server.url, odd) is True
    assert server_has_experiment(mlflow_server.url, f"{experiment} ") is False


def test_a_deleted_experiment_is_left_to_mlflow(
    mlflow_server: MlflowServer, experiment: str
) -> None:
    client = MlflowClient(mlflow_server.url)
    client.delete_experiment(client.create_experiment(experiment))
    assert server_has_experiment(mlflow_server.url, experiment) is None
    assert not experiment_is_new(mlflow_server.url, experiment)


def test_what_cannot_be_asked_plainly_is_not_guessed(
    mlflow_server: MlflowServer, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}"
    assert server_has_experiment(unreachable, experiment) is None
    assert not experiment_is_new(unreachable, experiment)
    assert server_has_experiment(f"{mlflow_server.url}/not-mlflow", experiment) is None

    monkeypatch.setenv("MLFLOW_TRACKING_INSECURE_TLS", "true")  # MLflow's own TLS handling
    assert server_has_experiment(mlflow_server.url, experiment) is None
