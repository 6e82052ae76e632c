"""A response cache: an identical request to the same model is never generated twice."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path

from tipbench.backends import Generation, GenerationRequest
from tipbench.suite import content_hash


def request_key(model_identity: str, request: GenerationRequest) -> str:
    """A hash of the model's identity and every field of the request."""
    return content_hash([model_identity, asdict(request)])


class ResponseCache:
    """Generations by request key, in a SQLite file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, structured INTEGER,"
            " latency_s REAL, created TEXT DEFAULT CURRENT_TIMESTAMP)"
        )

    def get(self, key: str) -> tuple[Generation, float] | None:
        """The cached generation and the latency it originally took, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, structured, latency_s"
                " FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return Generation(row[0], row[1], row[2], bool(row[3])), row[4]

    def put(self, key: str, generation: Generation, latency_s: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses"
                " (key, text, prompt_tokens, completion_tokens, structured, latency_s)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    generation.text,
                    generation.prompt_tokens,
                    generation.completion_tokens,
                    int(generation.structured),
                    latency_s,
                ),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
