"""Whether a run's human scores changed since a judge file (or the page) was given them.

Every write of human scores, complete or a draft, is a new version (`ScoresVersion`). A
judge file records per run the version it was exported with; the judging page holds the
version it loaded. Scores may be written over the current version only by the one who has
seen it: a file whose run moved on since its export was written by someone else, and
writing it would undo their work. A file may always re-write what it wrote itself (same
`export_id`), so a judge can apply, correct and apply the same file again.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tipbench.human_tier._file import CandidateScores, Item, JudgeFile
from tipbench.suite import SCORE_NAMES
from tipbench.tracking import CellRun, ScoresVersion, TrackingStore, version_scores


@dataclass(frozen=True)
class StaleRun:
    """A run of a judge file whose human scores changed since the file was exported."""

    item: str  # `items[3] (run …)`
    run_id: str
    exported: int | None  # the version in the file (None: a schema version 1 file)
    current: ScoresVersion

    def describe(self) -> str:
        """`items[0] (run …): scored since this file was exported (version 1 then, now
        version 2, by bob on the judging page at …)`."""
        then = (
            f"version {self.exported} then"
            if self.exported is not None
            else "exported without versions"
        )
        return (
            f"{self.item}: scored since this file was exported "
            f"({then}, now {self.current.describe()})"
        )


def changed_since(run: CellRun, item: Item, judge_file: JudgeFile) -> ScoresVersion | None:
    """The run's current version if someone else wrote its human scores since the export.

    None if it did not change, or if this file (same `export_id`) wrote the current one.
    A file without versions (schema version 1) counts every version written at or after
    its `exported_at` as a change (and one whose time is not known as none).
    """
    current = run.human_version()
    if current.number == 0:
        return None
    if judge_file.export_id is not None and current.source == judge_file.export_id:
        return None
    if item.scores_version is not None:
        return current if current.number != item.scores_version else None
    written, exported = _time(current.judged_at), _time(judge_file.exported_at)
    if written is None:
        return None
    return current if exported is None or written >= exported else None


def _time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def seen_scores(
    store: TrackingStore, run: CellRun, item: Item, judge_file: JudgeFile
) -> dict[str, CandidateScores] | None:
    """The run's human scores as the file last saw them, per candidate (none: {}).

    That is the newest version this file wrote itself (same `export_id`), else the one it
    was exported with. None when that version is not known (a file without versions, or a
    version from before versions were kept as artifacts).
    """
    if item.scores_version is None:
        return None
    number = item.scores_version
    if judge_file.export_id is not None:
        for later in range(run.human_version().number - 1, number, -1):
            document = _version_document(store, run.run_id, later)
            if document is not None and document.get("source") == judge_file.export_id:
                number = later
                break
    if number == 0:
        return {}
    document = _version_document(store, run.run_id, number)
    if document is None:
        return None
    return {
        cid: CandidateScores(**dict(zip(SCORE_NAMES, values, strict=True)))
        for cid, values in version_scores(document).items()
    }


def _version_document(store: TrackingStore, run_id: str, number: int) -> dict[str, Any] | None:
    """The `human_scores/v<N>.json` artifact of a run, if it is there."""
    with tempfile.TemporaryDirectory(prefix="tipbench-") as tmp:
        try:
            path = store.client.download_artifacts(run_id, f"human_scores/v{number}.json", tmp)
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception:  # not there (a draft from before drafts were versioned), unreadable
            return None
    return document if isinstance(document, dict) else None
