"""`tipbench airflow install-dags`: the two-line shim that enables the DAGs in a dags folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tipbench._errors import ConfigError

SHIM_NAME = "tipbench_dags.py"
SHIM = (
    '"""Airflow DAGs bench_collect, bench_judged, policy_simulate and prompt_optimize, shipped '
    'in the tipbench package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n"
    "from tipbench.orchestration.policy_dags import policy_simulate  # noqa: F401\n"
    "from tipbench.orchestration.optimize_dags import prompt_optimize  # noqa: F401\n"
)
# Shims earlier versions wrote: replaced without --force (they are tipbench's own).
_EARLIER_SHIMS = (
    '"""Airflow DAGs bench_collect, bench_judged and policy_simulate, shipped in the tipbench '
    'package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n"
    "from tipbench.orchestration.policy_dags import policy_simulate  # noqa: F401\n",
    '"""Airflow DAGs bench_collect and bench_judged, shipped in the tipbench package."""\n'
    "from tipbench.orchestration.dags import bench_collect, bench_judged  # noqa: F401\n",
)


def install_dags(folder: Path, *, force: bool = False) -> Path:
    """Write the shim into an Airflow dags folder (created if missing); return its path.

    Re-installing is a no-op; a different file of the same name is kept unless `force`.

    Raises:
        ConfigError: if the folder cannot be written, or holds another file of that name.
    """
    path = folder / SHIM_NAME
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == SHIM:
            return path
        if path.exists() and not force and path.read_text(encoding="utf-8") not in _EARLIER_SHIMS:
            raise ConfigError(f"{path} exists and is not tipbench's shim (--force replaces it)")
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: the dag processor never parses half a file.
        fd, tmp = tempfile.mkstemp(prefix=".tipbench-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(SHIM)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
