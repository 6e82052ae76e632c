"""The DAG conf (the admin API's run request plus the judge and the fan-out) and the shim."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tipbench import ConfigError
from tipbench.orchestration import SHIM, BenchConf, install_dags, param_specs, read_conf
from tipbench.pipeline import RunRequest

TABLE_KEYS = {  # SPEC §7's table
    "models", "prompts", "n_tips", "n_scenarios", "temperature", "experiment", "max_model_b",
    "ollama_url", "mlflow_url",
}  # fmt: skip


def test_params_cover_the_table_the_judge_and_the_fan_out() -> None:
    specs = param_specs()
    extra = {"judge_model", "structured", "timeout_minutes", "scenarios", "working_suite"}
    assert set(specs) == TABLE_KEYS | extra
    assert set(RunRequest.model_fields) <= set(specs)  # every key the admin API takes


def test_params_carry_the_admin_apis_types_and_bounds() -> None:
    specs = param_specs()
    api = RunRequest.model_json_schema()["properties"]
    for name in ("n_tips", "n_scenarios", "temperature", "max_model_b"):
        for bound in ("minimum", "maximum", "exclusiveMinimum"):
            assert specs[name].get(bound) == api[name].get(bound), (name, bound)
        assert specs[name]["type"] == api[name]["type"]
    assert specs["n_tips"] | {"description": None} == {
        "default": 5, "type": "integer", "minimum": 1, "maximum": 20, "description": None,
    }  # fmt: skip
    assert specs["experiment"]["pattern"] == api["experiment"]["pattern"]
    assert specs["models"] == {
        "default": "llamacpp:smollm2-135m",
        "type": "string",
        "minLength": 1,
        "description": api["models"]["description"],
    }
    assert specs["prompts"]["default"] == "v1,v2-mentor,v3-few-shot"
    assert specs["mlflow_url"]["type"] == ["string", "null"]
    assert specs["timeout_minutes"]["type"] == ["number", "null"]


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"n_tips": 0}, "n_tips: Input should be greater than or equal to 1"),
        ({"prompts": "v1,v9"}, "prompts: unknown prompt version 'v9'"),
        ({"models": "llamacpp:"}, "models: bad model spec 'llamacpp:'"),
        ({"experiment": "prod"}, "experiment: expected tip-bench-NAME"),
        ({"judge_model": "a b"}, "judge_model: bad model spec 'a b'"),
        ({"parallel_models": 2}, "config: parallel_models is no longer a conf key: the deploy"),
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"mlflow_url": "http://u:p@mlflow"}, "mlflow_url: credentials in URLs are not accepted"),
    ],
)
def test_bad_conf_is_one_line_naming_the_key(conf: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        read_conf(conf)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_conf_is_the_run_request_plus_judge_and_time_limit() -> None:
    conf = read_conf({"models": "qwen2.5:0.5b, gemma3:1b", "timeout_minutes": 30})
    assert isinstance(conf, RunRequest)
    assert conf.models == ["ollama:qwen2.5:0.5b", "ollama:gemma3:1b"]
    assert conf.collect_config().models == ["ollama:qwen2.5:0.5b", "ollama:gemma3:1b"]
    assert BenchConf().judge_model is None


def test_install_dags_writes_the_shim_once(tmp_path: Path) -> None:
    folder = tmp_path / "dags"
    path = install_dags(folder)
    assert path.read_text() == SHIM
    assert len(SHIM.splitlines()) == 4  # the docstring and an import per DAG module
    assert install_dags(folder) == path  # re-installing is a no-op
    path.write_text(
        '"""Airflow DAGs bench_collect and bench_judged, shipped in the tipbench package."""\n'
        "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n"
    )
    assert install_dags(folder).read_text() == SHIM  # an earlier version's shim is replaced
    path.write_text("# someone else's dag\n")
    with pytest.raises(ConfigError, match="is not tipbench's shim"):
        install_dags(folder)
    assert install_dags(folder, force=True).read_text() == SHIM


def test_install_dags_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", str(tmp_path / "d")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "bench_collect, bench_judged, policy_simulate and prompt_optimize" in done.stdout
    assert (tmp_path / "d" / "tipbench_dags.py").read_text() == SHIM
    blocked = tmp_path / "file"
    blocked.write_text("")
    failed = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", str(blocked / "x")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: cannot write") and failed.stderr.count("\n") == 1


def test_the_dag_module_parses_without_heavy_imports() -> None:
    """Airflow re-parses DAG files often: no MLflow, numpy, llama.cpp or web stack there."""
    code = (
        "import sys; import tipbench.orchestration.dags as d; "
        "heavy = [m for m in ('mlflow', 'numpy', 'llama_cpp', 'matplotlib', 'tipbench.auto_judge',"
        " 'tipbench.compare', 'tipbench.admin._app') if m in sys.modules]; "
        "print(d.bench_collect.dag_id, d.bench_judged.dag_id, heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("bench_collect bench_judged []")


def run_install(folder: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIPBENCH_"))}
    return subprocess.run(
        [sys.executable, "-m", "tipbench.cli", "airflow", "install-dags", folder],
        capture_output=True, text=True, check=False, env={**clean, **env}, cwd=tmp_path,
    )  # fmt: skip


def test_install_dags_says_how_to_unpause_them_without_airflows_url(tmp_path: Path) -> None:
    done = run_install(str(tmp_path / "dags"), tmp_path, AIRFLOW_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "new DAGs start paused" in done.stdout
    assert "airflow dags unpause bench_collect && airflow dags unpause bench_judged" in done.stdout


def test_install_dags_on_a_worker_gives_no_unpause_hints(tmp_path: Path) -> None:
    """A Celery worker has no metadata database (it reaches Airflow through the execution
    API only): `airflow dags unpause` cannot work there, so install-dags does not suggest it;
    the scheduler's machine (here with its database) still gets the hints."""
    worker = {"AIRFLOW_HOME": str(tmp_path / "worker"), "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor"}
    done = run_install(str(tmp_path / "worker" / "dags"), tmp_path, **worker)
    assert done.returncode == 0, done.stderr
    assert "this machine is a worker with no Airflow metadata database" in done.stdout
    assert "unpause bench_collect" not in done.stdout and "dags trigger" not in done.stdout

    database = tmp_path / "worker" / "airflow.db"
    sqlite3.connect(database).close()  # a started worker opens it: empty, no tables
    done = run_install(str(tmp_path / "worker" / "dags"), tmp_path, **worker)
    assert "this machine is a worker with no Airflow metadata database" in done.stdout

    database = tmp_path / "scheduler" / "airflow.db"
    database.parent.mkdir()
    with sqlite3.connect(database) as db:  # what `airflow db migrate` makes, in part
        db.execute("CREATE TABLE dag_run (id INTEGER PRIMARY KEY)")
    scheduler = {**worker, "AIRFLOW_HOME": str(database.parent)}
    done = run_install(str(database.parent / "dags"), tmp_path, **scheduler)
    assert done.returncode == 0, done.stderr
    assert "airflow dags unpause bench_collect" in done.stdout


def test_install_dags_refuses_slash_dags_when_airflow_home_is_unset(tmp_path: Path) -> None:
    done = run_install("/dags", tmp_path)  # "$AIRFLOW_HOME/dags" with AIRFLOW_HOME unset
    assert done.returncode != 0
    assert "AIRFLOW_HOME is unset, so the dags folder would be /dags" in done.stderr
    assert not Path("/dags").exists()
