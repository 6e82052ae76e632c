"""The README stays short and its links resolve; the documentation site builds strictly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README_MAX_LINES = 80  # what it is, the two commands, the loop, where to go next


def test_readme_is_short_and_opens_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].startswith('pip install ".[embedded]" && tipbench run')
    assert first_block[1].startswith("./scripts/test")


def test_the_readmes_loop_installs_what_it_runs_and_says_where_a_bigger_judge_comes_from() -> None:
    """Issue 34: the loop's install line carries every extra its commands need (the CLI
    names them when one is missing: `serve` for `tipbench serve`, `serve,policy` for
    `tipbench policy serve`), each such command says its extra, command 1 says how long it
    takes, and the Ollama judge is fetched before it is calibrated."""
    text = (ROOT / "README.md").read_text()
    loop = text.split("## The loop", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = loop.splitlines()
    install = re.fullmatch(r'pip install "\.\[([a-z,]+)\]".*', lines[0])
    assert install is not None, lines[0]
    extras = set(install.group(1).split(","))
    assert {"embedded", "serve", "policy"} <= extras
    serve = next(line for line in lines if line.startswith("tipbench serve"))
    policy = next(line for line in lines if line.startswith("tipbench policy serve"))
    assert "[serve]" in serve and "[serve,policy]" in policy
    for source, needed in (("cli/_serve.py", "serve"), ("cli/_policy.py", "serve,policy")):
        assert f"tipbench[{needed}]" in (ROOT / "src" / "tipbench" / source).read_text()
    pull = next(i for i, line in enumerate(lines) if line.startswith("ollama pull qwen2.5:3b"))
    calibrate = next(i for i, line in enumerate(lines) if "--judge-model qwen2.5:3b" in line)
    assert pull < calibrate
    opening = " ".join(text.split("## ", 1)[0].split())
    assert re.search(r"Expect about \d+ minutes? for the run on a 2-core machine", opening)


def test_readme_links_point_at_files_that_exist() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text.replace("\n", " "))
    assert targets, "the README links to the documentation"
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert missing == []


@pytest.mark.slow
def test_the_documentation_site_builds_strictly(tmp_path: Path) -> None:
    """Strict: a broken link, an anchor that does not exist or a page outside the nav fails."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "promotion-checklist" / "index.html").exists()
    page = (tmp_path / "index.html").read_text()
    assert "What you need for a promotion" in page
