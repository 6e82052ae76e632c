"""`tipbench airflow …`: enabling tipbench's DAGs in an Airflow deployment."""

from __future__ import annotations

import os
from pathlib import Path

import click

from tipbench._errors import ConfigError, TipbenchError
from tipbench.orchestration import (
    AirflowClient,
    AirflowSettings,
    install_dags,
    is_worker_without_database,
)

#: The DAGs the shim enables, in the order they are unpaused.
DAG_IDS = ("bench_collect", "bench_judged", "policy_simulate", "prompt_optimize")


@click.group("airflow")
def airflow_group() -> None:
    """Run the pipeline on Apache Airflow (the `airflow` extra)."""


@airflow_group.command("install-dags")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace another file of the shim's name.")
def install_dags_command(folder: Path, force: bool) -> None:
    """Write the shim that enables bench_collect, bench_judged, policy_simulate and
    prompt_optimize into Airflow's dags FOLDER, then unpause them through Airflow's REST API
    when TIPBENCH_AIRFLOW_URL is set (new DAGs start paused), else print how to (on a worker
    with no metadata database, where `airflow dags …` cannot work, that nothing is left to
    do)."""
    if not os.environ.get("AIRFLOW_HOME") and folder.resolve().parent == Path("/"):
        raise ConfigError(
            f"AIRFLOW_HOME is unset, so the dags folder would be {folder.resolve()}: give "
            "Airflow's dags folder (airflow config get-value core dags_folder)"
        )
    path = install_dags(folder, force=force)
    click.echo(f"wrote {path}: Airflow now lists {', '.join(DAG_IDS[:-1])} and {DAG_IDS[-1]}")
    unpaused = _unpause()
    if unpaused is None and is_worker_without_database():
        click.echo(
            "this machine is a worker with no Airflow metadata database: the DAGs are "
            "unpaused and triggered where the scheduler and API server run, not here"
        )
        return
    if unpaused is None:
        click.echo(
            "new DAGs start paused (a trigger waits, asset events are ignored): "
            + " && ".join(f"airflow dags unpause {dag_id}" for dag_id in DAG_IDS)
        )
    click.echo(
        "trigger a run: airflow dags trigger bench_collect --conf "
        '\'{"models": "llamacpp:smollm2-135m", "n_scenarios": 2}\''
    )


def _unpause() -> list[str] | None:
    """Unpause the DAGs through the REST API; None (after saying why) when it cannot."""
    try:
        settings = AirflowSettings.from_env()
    except ConfigError as exc:
        click.echo(f"warning: {exc}", err=True)
        return None
    if settings is None:
        return None
    client = AirflowClient(settings)
    try:
        for dag_id in DAG_IDS:
            client.set_paused(dag_id, False)
    except TipbenchError as exc:
        click.echo(
            f"warning: cannot unpause the DAGs yet ({exc}); once Airflow has parsed "
            "them, run install-dags again",
            err=True,
        )
        return None
    finally:
        client.close()
    click.echo(f"unpaused {', '.join(DAG_IDS)} at {settings.url}")
    return list(DAG_IDS)
