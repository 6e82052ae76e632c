"""The decision log in SQL: a batch of decisions written with their shadows' rows and their
counts in one transaction, read back by decision id, by the client's event id, or whole.

The log is read whole in keyset pages (`(seq, id) > (?, ?)`, on the `(seq, id)` index), so an
export costs the same per row at any size. The columns are `_rows.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tipbench.policy_service._records import DecisionRecord, LoggedDecision, PolicyDecision
from tipbench.policy_service._rows import (
    DECISION_COLUMNS,
    SHADOW_COLUMNS,
    decision_values,
    logged_decision,
    logged_shadow,
    shadow_values,
)
from tipbench.policy_service._schema import UniqueKey
from tipbench.policy_service._sql_base import SqlBase
from tipbench.policy_service._store import (
    Cursor,
    DecisionConflict,
    DuplicateDecision,
    DuplicateEvent,
)
from tipbench.policy_service._sums import Tallies

EXPORT_PAGE = 1000  # decisions read per transaction when the log is exported
PAGE_WHERE = "(seq, id) > (?, ?)"  # the rows after the last one read: an index range scan
_ID = DECISION_COLUMNS.index("id")


def _insert(table: str, columns: Sequence[str]) -> str:
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


class SqlLog(SqlBase):
    """Writing and reading the decision log."""

    def record_decisions(self, records: Sequence[DecisionRecord]) -> None:
        tallies = Tallies()
        decisions, shadows = [], []
        for record in records:
            decisions.append(decision_values(record))
            tallies.served(record.decision.policy, record.decision.source, "decisions")
            for shadow in record.shadows:
                shadows.append(shadow_values(record.id, shadow))
                tallies.add(shadow.policy, "shadow_decisions")
        try:
            with self._transaction(write=True) as cur:
                cur.executemany(self._sql(_insert("decisions", DECISION_COLUMNS)), decisions)
                if shadows:
                    cur.executemany(self._sql(_insert("shadow_decisions", SHADOW_COLUMNS)), shadows)
                self._count(cur, tallies)
        except Exception as exc:
            key = self._duplicate_key(exc)
            if key is None:
                raise
            raise self._duplicate(key, records) from exc

    def _duplicate(self, key: UniqueKey, records: Sequence[DecisionRecord]) -> DecisionConflict:
        """The error of a batch that violated `key`, naming the record that did."""
        if key == "event_id":
            ids = [r.event_id for r in records if r.event_id is not None]
            taken = next((e for e in ids if self.decision_for_event(e) is not None), None)
            return DuplicateEvent(taken or (ids[0] if ids else "?"))
        logged = next((r.id for r in records if self.decision(r.id) is not None), None)
        return DuplicateDecision(logged or records[0].id)

    def decision(self, decision_id: str) -> LoggedDecision | None:
        with self._transaction(write=False) as cur:
            found = self._logged(cur, "id = ?", (decision_id,))
        return found[0] if found else None

    def decision_for_event(self, event_id: str) -> LoggedDecision | None:
        with self._transaction(write=False) as cur:
            found = self._logged(cur, "event_id = ?", (event_id,))
        return found[0] if found else None

    def _logged(
        self, cur: Cursor, where: str, params: Sequence[Any], limit: int | None = None
    ) -> list[LoggedDecision]:
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        self._run(
            cur,
            f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions WHERE {where} "
            f"ORDER BY seq, id{tail}",
            params,
        )
        rows = cur.fetchall()
        if not rows:
            return []
        marks = ", ".join("?" for _ in rows)
        self._run(
            cur,
            f"SELECT {', '.join(SHADOW_COLUMNS)} FROM shadow_decisions "
            f"WHERE decision_id IN ({marks}) ORDER BY decision_id, policy",
            [row[_ID] for row in rows],
        )
        shadows: dict[str, list[PolicyDecision]] = {}
        for shadow in cur.fetchall():
            decision_id, decision = logged_shadow(shadow)
            shadows.setdefault(decision_id, []).append(decision)
        return [logged_decision(row, shadows.get(row[_ID], [])) for row in rows]

    def decisions(self) -> Iterator[LoggedDecision]:
        after: tuple[int, str] = (-1, "")  # (seq, id) of the last row handed out
        while True:  # keyset pages: the log is never held in memory whole
            with self._transaction(write=False) as cur:
                page = self._logged(cur, PAGE_WHERE, after, EXPORT_PAGE)
            if not page:
                return
            yield from page
            last = page[-1].record
            after = (last.sequence, last.id)
