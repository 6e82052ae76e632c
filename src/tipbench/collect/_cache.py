"""A response cache: an identical request to the same model is never generated twice.

An answer is stored under the key of the cell's first request, with the number of attempts
it took (a retry after unusable output moves the seed on) and the path it took (free first or
schema first, under `auto`), so a replay reports the same.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path

from tipbench.backends import Generation, GenerationRequest
from tipbench.suite import content_hash


def request_key(model_identity: str, request: GenerationRequest) -> str:
    """A hash of the model's identity and every field of the request.

    `json_object` and `form` count only when set, so requests made before they existed keep
    their keys; when a free answer counts as complete does not change the answer's tokens,
    so it does not count. `repeat_penalty` counts: answers cached before backends sent it
    were sampled with a server's own penalty.
    """
    fields = asdict(request)
    del fields["complete"]
    for added in ("json_object", "form"):  # fields newer than the cache: counted when set
        if not fields[added]:
            del fields[added]
    return content_hash([model_identity, fields])


#: The response cache's file in tipbench's data folder (`TIPBENCH_HOME`).
CACHE_FILE = "cache.sqlite"


class ResponseCache:
    """Generations by request key, in a SQLite file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses_v2 (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, structured INTEGER,"
            " latency_s REAL, attempts INTEGER NOT NULL DEFAULT 1,"
            " created TEXT DEFAULT CURRENT_TIMESTAMP)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses_v2)")}
        if "path" not in columns:  # a cache from before paths were kept
            self._db.execute("ALTER TABLE responses_v2 ADD COLUMN path TEXT")

    def get(self, key: str) -> tuple[Generation, float, int, str | None] | None:
        """The cached generation, the latency, the attempts and the path it originally took
        (None: cached before paths were kept), if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, structured, latency_s, attempts,"
                " path FROM responses_v2 WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return Generation(row[0], row[1], row[2], bool(row[3])), row[4], row[5], row[6]

    def put(
        self,
        key: str,
        generation: Generation,
        latency_s: float,
        attempts: int = 1,
        path: str | None = None,
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses_v2 (key, text, prompt_tokens,"
                " completion_tokens, structured, latency_s, attempts, path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    generation.text,
                    generation.prompt_tokens,
                    generation.completion_tokens,
                    int(generation.structured),
                    latency_s,
                    attempts,
                    path,
                ),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
