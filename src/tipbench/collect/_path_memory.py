"""What the probe learned, remembered in `TIPBENCH_HOME`, so that no request is asked twice.

Each probe request's answer is kept under the request's key: a hash of the model's identity
(which changes with its weights) and every field of the request — the prompt version's
rendered messages (so the suite's prompt and its version), the seed, temperature, token budget
and `n_tips`' schema. A later collect of the same model, settings and prompt versions, into
any experiment, finds every answer it needs and chooses its path without asking the model
anything; the answers are the probe's own, so the choice is the same as the first collect's.
Kept apart from the response cache: `--no-cache` does not forget them. The same file keeps
the digests of model files (`_known_paths.py`), by path, size and modification time.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

#: The file in tipbench's data folder (`TIPBENCH_HOME`).
MEMORY_FILE = "generation-paths.sqlite"


@dataclass(frozen=True)
class ProbeAnswer:
    """One probe request's outcome: its free answer, and its constrained one if asked."""

    free_tokens: int
    usable: bool
    schema_tokens: int | None = None
    tips: int | None = None  # the tips the free answer held (None: remembered before counted)

    def found(self, n_tips: int) -> int:
        """The tips the free answer held, of `n_tips` (one remembered before they were
        counted: all if it was usable, else none)."""
        if self.tips is not None:
            return min(self.tips, n_tips)
        return n_tips if self.usable else 0


class PathMemory:
    """Probe answers by request key, in a SQLite file (one connection, one thread)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS probe_answers (key TEXT PRIMARY KEY,"
            " free_tokens INTEGER NOT NULL, usable INTEGER NOT NULL, schema_tokens INTEGER,"
            " created TEXT DEFAULT CURRENT_TIMESTAMP)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(probe_answers)")}
        if "tips" not in columns:  # a file from before the tips were counted
            self._db.execute("ALTER TABLE probe_answers ADD COLUMN tips INTEGER")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS file_digests (key TEXT PRIMARY KEY, sha256 TEXT NOT NULL)"
        )

    def get(self, key: str) -> ProbeAnswer | None:
        row = self._db.execute(
            "SELECT free_tokens, usable, schema_tokens, tips FROM probe_answers WHERE key = ?",
            (key,),
        ).fetchone()
        return None if row is None else ProbeAnswer(row[0], bool(row[1]), row[2], row[3])

    def put(self, key: str, answer: ProbeAnswer) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO probe_answers (key, free_tokens, usable, schema_tokens, tips)"
            " VALUES (?, ?, ?, ?, ?)",
            (key, answer.free_tokens, int(answer.usable), answer.schema_tokens, answer.tips),
        )

    def digest(self, key: str) -> str | None:
        """A model file's SHA-256 by `path|size|mtime_ns` (None: not computed yet)."""
        row = self._db.execute("SELECT sha256 FROM file_digests WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def keep_digest(self, key: str, sha256: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO file_digests (key, sha256) VALUES (?, ?)", (key, sha256)
        )

    def close(self) -> None:
        self._db.close()
