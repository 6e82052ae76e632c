"""A warmed prompt kept across loads of the embedded model, within one process.

The automatic judge warms each load of its model with the rubric every request starts with
(about 1,600 tokens: 9 s for SmolLM2-135M on two cores). `tipbench optimize` loads the judge
once per evaluation, so it paid that again and again. After a warm the embedded backend keeps
a copy of llama.cpp's state (the evaluated tokens and their KV cache); a later load of the
same model file and context, warmed with the same request, restores that copy
instead of evaluating the prompt again. Either way the prompt was evaluated from a fresh
context in the same blocks (`_aligned.py`), so the restored state is the one evaluating
would give, and the answers that follow do not change.

One state is kept (the last warm's), and none larger than `MAX_STATE_BYTES`.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

#: The largest state kept in memory (SmolLM2-135M's warmed rubric takes about 50 MB).
MAX_STATE_BYTES = 1 << 30


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
    """The last warm's state, shared by the process's loads (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Warmed | None = None

    def get(self, key: Hashable) -> Warmed | None:
        with self._lock:
            last = self._last
        return last if last is not None and last.key == key else None

    def keep(self, warmed: Warmed) -> None:
        with self._lock:
            self._last = warmed if warmed.size <= MAX_STATE_BYTES else None

    def clear(self) -> None:
        with self._lock:
            self._last = None


#: The process's one store of warmed states.
WARMED = WarmedStates()
