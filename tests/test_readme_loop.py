"""Issue 47, item 6: the README's loop, pasted into a shell on a machine without Ollama.

The test reads the loop's block from README.md and runs it in bash as a user pastes it, in
a fresh `TIPBENCH_HOME` and a fresh `HOME`, with the variables the README names to make the
grid small (`GRID`) and to put the servers on ports free here (`ADMIN_PORT`, `POLICY_PORT`,
`MLFLOW_PORT`). Three kinds of line are not run as written: the install (this environment
is that install), the `[Ollama]` lines (Ollama cannot be installed here) and the comment
where a person scores the exported file, which a stand-in does (every candidate 4, 3, 4).
After each command the test's copy of the block prints its exit code, and at its end the
tokens the loop made, so that the test can use the servers the loop left running: the
admin panel, the policy service and MLflow's UI, each asked for what the loop recorded.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.servers import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent
ARTIFACTS = ROOT / "test-artifacts"
EXPERIMENT = "tip-bench-auto"
LOOP_TIMEOUT_S = 1800.0  # the run of a 3-cell grid on the embedded model, on a busy machine
SERVER_TIMEOUT_S = 120.0
GRID = "--n-scenarios 1 --n-tips 2"
#: The stand-in for the person who scores the exported judge file.
PERSON = """
import json, os, pathlib
path = pathlib.Path(os.environ["TIPBENCH_HOME"]) / "judge" / "tip-bench-auto.json"
document = json.loads(path.read_text())
for item in document["items"]:
    for candidate in item["candidates"]:
        candidate["scores"].update(relevance=4, actionability=3, tone=4)
path.write_text(json.dumps(document))
"""


def loop_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return text.split("## The loop", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].splitlines()


def command_of(line: str) -> str:
    """The line without its trailing comment."""
    return re.sub(r"\s+#\s.*$", "", line).strip()


def pasted(lines: list[str], person: Path) -> tuple[str, dict[int, str]]:
    """The block as the test runs it, and the README line each exit code reported is of."""
    script: list[str] = []
    commands: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        if line.startswith("pip install"):
            script.append(f"# not run here (this environment is the install): {line}")
            continue
        if "[Ollama]" in line:
            script.append(f"# not run here (no Ollama): {line}")
            continue
        if "a person scores the exported file" in line:
            line = f"{sys.executable} {person}  {line}"
        command = command_of(line)
        script.append(line)
        if command and not command.startswith("#") and not command.endswith("&"):
            script.append(f'echo "::rc $? {number}"')
            commands[number] = command
    script.append('echo "::token admin $TIPBENCH_ADMIN_TOKEN"')
    script.append('echo "::token policy $TIPBENCH_POLICY_TOKEN"')
    return "\n".join(script) + "\n", commands


def session(leader: int) -> list[int]:
    """Every process of the session `leader` started (the loop's servers included)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[3]) == leader:
                found.append(int(pid))
    return found


@pytest.fixture
def ports() -> dict[str, str]:
    return {name: str(free_port()) for name in ("ADMIN_PORT", "POLICY_PORT", "MLFLOW_PORT")}


@pytest.fixture
def loop(tmp_path: Path, ports: dict[str, str]) -> Iterator[tuple[str, dict[int, str], Path]]:
    """The block run to its end in bash; its servers stopped (its whole session) after."""
    person = tmp_path / "person.py"
    person.write_text(PERSON)
    script, commands = pasted(loop_block(), person)
    (tmp_path / "loop.sh").write_text(script)
    home = tmp_path / "tipbench-home-of-the-loop"
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path / "user"),
        "LANG": "C.UTF-8",
        "TIPBENCH_HOME": str(home),
        "TIPBENCH_LLAMA_THREADS": os.environ.get("TIPBENCH_LLAMA_THREADS", "1"),
        "GRID": GRID,
        **ports,
    }
    output = tmp_path / "loop.out"
    with output.open("wb") as out:
        bash = subprocess.Popen(
            ["bash", str(tmp_path / "loop.sh")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
            start_new_session=True,  # its servers, started with `&`, stay in its session
        )
    try:
        bash.wait(timeout=LOOP_TIMEOUT_S)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)  # what a user pasting it would see
        (ARTIFACTS / "readme-loop.txt").write_text(output.read_text())
        yield output.read_text(), commands, home
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in session(bash.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            time.sleep(2)
        bash.wait(timeout=30)


def answered(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """The server's answer once it is up (it was started in the background)."""
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    while True:
        try:
            return httpx.get(url, headers=headers, timeout=10)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_the_readmes_loop_runs_as_pasted_without_ollama(
    loop: tuple[str, dict[int, str], Path], ports: dict[str, str]
) -> None:
    output, commands, home = loop
    codes = {int(n): int(rc) for rc, n in re.findall(r"^::rc (\d+) (\d+)$", output, re.M)}
    assert set(codes) == set(commands), output[-4000:]
    by_command = {commands[n]: rc for n, rc in codes.items()}
    refused = {c: rc for c, rc in by_command.items() if rc != 0 and "promote" not in c}
    assert not refused, (refused, output[-4000:])
    # on one scenario nothing can be promoted: both promote lines refuse (exit 3) and say so
    promote = [c for c in by_command if c.startswith("tipbench promote")]
    assert len(promote) == 2 and {by_command[c] for c in promote} == {3}, output[-4000:]
    assert "this grid can never promote a prompt" in output
    assert "dry run: nothing changed" in output and "refusal recorded in run" in output
    judge_file = home / "judge" / f"{EXPERIMENT}.json"
    assert judge_file.is_file()  # where the loop's `judge apply` line found it
    assert "== leaderboard" in output or "human" in output

    admin = dict(re.findall(r"^::token (admin|policy) (\S+)$", output, re.M))
    bearer = {"Authorization": f"Bearer {admin['admin']}"}
    panel = f"http://127.0.0.1:{ports['ADMIN_PORT']}"
    assert answered(f"{panel}/login").status_code == 200
    listed = answered(f"{panel}/api/bench/experiments", bearer).json()
    assert EXPERIMENT in [e["name"] for e in listed]
    views = answered(f"{panel}/api/bench/leaderboard/{EXPERIMENT}/view", bearer).json()
    assert len(views["human"]["rows"]) == 3  # the person's scores, applied: 3 prompts
    policy = f"http://127.0.0.1:{ports['POLICY_PORT']}/ping"
    assert answered(policy, {"Authorization": f"Bearer {admin['policy']}"}).status_code == 200
    mlflow = f"http://127.0.0.1:{ports['MLFLOW_PORT']}"
    found = answered(
        f"{mlflow}/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}"
    )
    assert found.status_code == 200 and found.json()["experiment"]["name"] == EXPERIMENT
