"""Decision ids seen in a log, in bounded memory: a decision counted twice is refused.

A log concatenated with itself doubles n and narrows every interval by √2 (1,000 decisions
read as 2,000: DR's interval 0.1107 → 0.0768 wide); one id logged with two rewards counts a
user's response twice, or one of two that cannot both be true. Every row's `decision_id` is
kept as a 64-bit hash (`decision_hash`: BLAKE2b, the same in every process) with its row
number and reward: 16 bytes a decision, 32 MB for 2 million, in sorted runs that merge as
they grow (a run is merged with the one before it when that one is no more than twice its
size, up to `RUN_CAP` ids: a merge copies both runs, so an uncapped last merge of 2 million
would hold twice their 32 MB at once). Each chunk of rows is looked up in every run (binary
search: some 8 full runs and a few small ones at 2 million) and in itself. Two different
ids share a hash with probability about n²/2⁶⁵ (10⁻⁷ at 2 million decisions); the message
names the id and both rows, so such a refusal can be checked by hand.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.evaluate._checks import LogRowError

Hashes = npt.NDArray[np.int64]
RUN_CAP = 1 << 18  # ids in a run that no longer merges: 4 MB


@dataclass(frozen=True)
class _Run:
    """Hashes sorted, with the row number and reward (NaN: none) of each."""

    hashes: Hashes
    rows: npt.NDArray[np.uint32]
    rewards: npt.NDArray[np.float32]

    def __len__(self) -> int:
        return len(self.hashes)

    @classmethod
    def sorted(
        cls, hashes: Hashes, rows: npt.NDArray[np.uint32], rewards: npt.NDArray[np.float32]
    ) -> _Run:
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], rows[order], rewards[order])

    def merged(self, later: _Run) -> _Run:
        """Both runs as one, sorted (a later id after an equal earlier one), without a
        sort: each of `later`'s ids goes where a binary search puts it."""
        size = len(self) + len(later)
        into = np.searchsorted(self.hashes, later.hashes, side="right")
        into += np.arange(len(later))
        mine = np.ones(size, dtype=np.bool_)
        mine[into] = False
        parts = []
        for name in ("hashes", "rows", "rewards"):
            merged = np.empty(size, dtype=getattr(self, name).dtype)
            merged[into] = getattr(later, name)
            merged[mine] = getattr(self, name)
            parts.append(merged)
        return _Run(*parts)


def decision_hash(decision: str) -> bytes:
    """A decision id's 64-bit hash (8 bytes): what `DecisionIds` keeps of it, and, by its
    first bit, the fold of the reward model's cross-fitting (`_sums`), which must not depend
    on the log's order or contents."""
    return hashlib.blake2b(decision.encode(), digest_size=8).digest()


def _reward_text(reward: float) -> str:
    return "null" if np.isnan(reward) else f"{reward:g}"


class DecisionIds:
    """Every decision id read so far (as hashes); `add` refuses one read before."""

    def __init__(self, unit: str = "row") -> None:
        self.unit = unit
        self._runs: list[_Run] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def add(
        self, ids: list[str], digests: list[bytes], rows: list[int], rewards: list[float | None]
    ) -> None:
        """Add a chunk of rows' ids (in log order) with their `decision_hash`.

        Raises:
            LogRowError: an id read before (in an earlier chunk or this one), naming the id
                and both rows, the earliest such row of the chunk.
        """
        if not ids:
            return
        hashes = np.frombuffer(b"".join(digests), dtype=np.int64)
        numbers = np.asarray(rows, dtype=np.uint32)
        values = np.array([np.nan if r is None else r for r in rewards], dtype=np.float32)
        chunk = _Run.sorted(hashes, numbers, values)
        clash = self._first_clash(chunk)
        if clash is not None:
            first, second = clash
            where = ids[rows.index(int(chunk.rows[second]))]
            raise self._refusal(where, first, second, chunk)
        self._runs.append(chunk)
        while (
            len(self._runs) > 1
            and len(self._runs[-2]) <= 2 * len(self._runs[-1])
            and len(self._runs[-2]) + len(self._runs[-1]) <= RUN_CAP
        ):
            later = self._runs.pop()
            self._runs[-1] = self._runs[-1].merged(later)

    def _first_clash(self, chunk: _Run) -> tuple[tuple[_Run, int], int] | None:
        """((the run holding the earlier row, its index there), the later row's index in the
        chunk) of the chunk's first row (in log order) whose id was read before."""
        found: list[tuple[int, _Run, int, int]] = []  # (later row number, run, index, index)
        same = np.flatnonzero(chunk.hashes[1:] == chunk.hashes[:-1])
        for i in same:  # equal neighbours: the stable sort keeps log order within a hash
            found.append((int(chunk.rows[i + 1]), chunk, int(i), int(i + 1)))
        for run in self._runs:
            at = np.searchsorted(run.hashes, chunk.hashes)
            inside = at < len(run)
            hit = np.flatnonzero(
                inside & (run.hashes[np.minimum(at, len(run) - 1)] == chunk.hashes)
            )
            for i in hit:
                found.append((int(chunk.rows[i]), run, int(at[i]), int(i)))
        if not found:
            return None
        _, run, earlier, later = min(found, key=lambda f: f[0])
        return (run, earlier), later

    def _refusal(
        self, decision: str, first: tuple[_Run, int], second: int, chunk: _Run
    ) -> LogRowError:
        run, index = first
        rows = (int(run.rows[index]), int(chunk.rows[second]))
        rewards = (float(run.rewards[index]), float(chunk.rewards[second]))
        units = f"{self.unit}s {rows[0]:,} and {rows[1]:,}"
        if rewards[0] == rewards[1] or all(np.isnan(rewards)):
            return LogRowError(
                f"decision {decision[:40]!r} is logged twice ({units}): a decision counted "
                "twice narrows every interval; export the log once"
            )
        return LogRowError(
            f"decision {decision[:40]!r} is logged twice with conflicting rewards ({units}: "
            f"{_reward_text(rewards[0])} and {_reward_text(rewards[1])})"
        )
