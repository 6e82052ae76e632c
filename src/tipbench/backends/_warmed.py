"""A warmed prompt kept across loads of the embedded model: in the process, and on disk.

The automatic judge warms each load of its model with the rubric every request starts with
(about 1,600 tokens: 9 s for SmolLM2-135M on two cores). `tipbench optimize` loads the judge
once per evaluation, and every `judge auto` (an Airflow task, a second pass) is a new
process, so each paid that again. After a warm the embedded backend keeps a copy of
llama.cpp's state (the evaluated tokens and their KV cache); a later load of the same model
file and context, warmed with the same request, restores that copy instead of evaluating
the prompt again. Either way the prompt was evaluated from a fresh context in the same
blocks (`_aligned.py`), so the restored state is the one evaluating would give, and the
answers that follow do not change.

One state is kept in memory (the last warm's), and none larger than `MAX_STATE_BYTES`.
Given a folder (`BackendOptions.warm_dir`: the judge's is `TIPBENCH_HOME/warmed`), the last
warm's state is also written there, for the next process: a file named by the hash of its
key, which also holds the llama.cpp build and the CPU features it computed with (a home
shared by two machines restores only the state its own machine wrote). A file that cannot
be read is evaluated again, not trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import zipfile
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The largest state kept in memory or on disk (SmolLM2-135M's warmed rubric takes 60 MB).
MAX_STATE_BYTES = 1 << 30
_SUFFIX = ".warmed.npz"


@dataclass(frozen=True)
class Warmed:
    """llama.cpp's state after a warm, and the prompt length `AlignedReuse` had then."""

    key: Hashable
    state: Any  # llama_cpp.LlamaState
    last_prompt: int

    @property
    def size(self) -> int:
        return int(self.state.llama_state_size) + int(self.state.scores.nbytes)


class WarmedStates:
    """The last warm's state, shared by the process's loads (thread-safe), and on disk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Warmed | None = None

    def get(self, key: Hashable, folder: Path | None = None) -> Warmed | None:
        with self._lock:
            last = self._last
        if last is not None and last.key == key:
            return last
        return _read(folder / _file_name(key), key) if folder is not None else None

    def keep(self, warmed: Warmed, folder: Path | None = None) -> None:
        fits = warmed.size <= MAX_STATE_BYTES
        with self._lock:
            self._last = warmed if fits else None
        if folder is not None and fits:
            _write(folder, warmed)

    def clear(self) -> None:
        with self._lock:
            self._last = None


def _file_name(key: Hashable) -> str:
    import llama_cpp

    build = f"{llama_cpp.__version__}|{llama_cpp.llama_print_system_info().decode()}"
    return hashlib.sha256(f"{build}|{key!r}".encode()).hexdigest()[:32] + _SUFFIX


def _write(folder: Path, warmed: Warmed) -> None:
    """Write the state as the folder's one file (atomically: a reader sees all or none);
    a folder that cannot be written is left as it is."""
    state = warmed.state
    meta = {"n_tokens": state.n_tokens, "seed": state.seed, "last_prompt": warmed.last_prompt}
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as out:
            np.savez(
                out,
                input_ids=state.input_ids,
                scores=state.scores,
                llama_state=np.frombuffer(state.llama_state, dtype=np.uint8),
                meta=np.array(json.dumps(meta)),
            )
        name = _file_name(warmed.key)
        os.replace(out.name, folder / name)
        for other in folder.glob(f"*{_SUFFIX}"):
            if other.name != name:
                other.unlink(missing_ok=True)


def _read(path: Path, key: Hashable) -> Warmed | None:
    """The state in `path`, or None if there is none or it cannot be read whole."""
    from llama_cpp.llama import LlamaState

    try:
        with np.load(path, allow_pickle=False) as saved:
            meta = json.loads(str(saved["meta"]))
            llama_state = saved["llama_state"].tobytes()
            state = LlamaState(
                input_ids=saved["input_ids"],
                scores=saved["scores"],
                n_tokens=int(meta["n_tokens"]),
                llama_state=llama_state,
                llama_state_size=len(llama_state),
                seed=int(meta["seed"]),
            )
            return Warmed(key, state, int(meta["last_prompt"]))
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
        return None


#: The process's one store of warmed states.
WARMED = WarmedStates()
