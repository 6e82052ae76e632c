"""What the wheel holds: tipbench with its data, not the tests' and benchmarks' helpers
(issue 33, item 6: `tipbench_dev` lives beside tipbench in `src/` and stays out)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


@pytest.mark.slow
def test_the_wheel_holds_tipbench_and_its_data_and_no_dev_helpers(tmp_path: Path) -> None:
    """Built from a copy of the sources (a stale build/ folder cannot add to it), with the
    installed setuptools (no download)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", project / "src", ignore=ignore)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(tmp_path / "dist")],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("tipbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"tipbench", wheel.name.split("-py3")[0] + ".dist-info"}
    packages = {name.split("/")[1] for name in names if name.count("/") > 1}
    assert {"stats", "human_tier", "compare", "tracking", "suite"} <= packages
    assert "_dev" not in packages
    assert "tipbench/suite/data/tips/suite.yaml" in names
    assert "tipbench/admin/templates/base.html" in names
