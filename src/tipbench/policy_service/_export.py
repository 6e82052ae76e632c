"""Exporting the decision log, for off-policy evaluation and audits: JSON lines, Parquet, or
Vowpal Wabbit's DSJson (`_dsjson.py`).

JSON lines and Parquet hold one row per decision, in sequence order; every row has the same
shape:

    decision_id, sequence, time, user_id, event_id, policy, route, context{local_hour,
    weekday, open_tasks, minutes_to_deadline, tips_today}, feature_version, feature_names,
    features, candidates[{tip_id, category, score, probability, source{model, prompt_version,
    experiment, run_id, tip_index}}], tip_id, category, propensity,
    settings{epsilon, alpha, floor, ridge, seed},
    shadows[{policy, feature_version, features, candidates[...], tip_id, category, propensity,
    settings{...}}],
    reward, event, dwell_s, rewarded_at    (null until a reward arrives or the decision
                                            expires: event "expired", reward the default or null)
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from tipbench._errors import ConfigError
from tipbench.policies import FEATURE_NAMES
from tipbench.policy_service._dsjson import dsjson_event
from tipbench.policy_service.store._records import (
    LoggedDecision,
    PolicyDecision,
    candidate_fields,
    moment_fields,
)
from tipbench.policy_service.store._store import StateStore

LogFormat = Literal["jsonl", "parquet", "dsjson"]
LOG_FORMATS: tuple[LogFormat, ...] = ("jsonl", "parquet", "dsjson")
PARQUET_PAGE = 1000  # rows per Parquet row group write


def _policy_fields(decision: PolicyDecision) -> dict[str, Any]:
    return {
        "feature_version": decision.feature_version,
        "features": list(decision.features),
        "candidates": [candidate_fields(c) for c in decision.candidates],
        "tip_id": decision.tip_id,
        "category": decision.category,
        "propensity": decision.propensity,
        "settings": None if decision.settings is None else decision.settings.model_dump(),
    }


def decision_row(logged: LoggedDecision) -> dict[str, Any]:
    """One exported row (see the module docstring for its shape)."""
    record, reward = logged.record, logged.reward
    version = record.decision.feature_version
    return {
        "decision_id": record.id,
        "sequence": record.sequence,
        "time": record.created_at,
        "user_id": record.user_id,
        "event_id": record.event_id,
        "policy": record.decision.policy,
        "route": record.route,
        "context": moment_fields(record.moment),
        "feature_names": list(FEATURE_NAMES[version]),  # type: ignore[index]
        **_policy_fields(record.decision),
        "shadows": [{"policy": s.policy, **_policy_fields(s)} for s in record.shadows],
        "reward": None if reward is None else reward.reward,
        "event": None if reward is None else reward.event,
        "dwell_s": None if reward is None else reward.dwell_s,
        "rewarded_at": None if reward is None else reward.rewarded_at,
    }


def decision_rows(store: StateStore) -> Iterator[dict[str, Any]]:
    for logged in store.decisions():
        yield decision_row(logged)


def export_log(store: StateStore, out: Path, fmt: LogFormat) -> int:
    """Write the decision log to `out` (replaced only once complete); returns the row count.

    Raises:
        ConfigError: `out`'s folder cannot be made or written (one line, not a traceback).
    """
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write there: {exc.strerror}") from None
    os.close(fd)
    try:
        if fmt == "parquet":
            count = _write_parquet(decision_rows(store), Path(tmp))
        elif fmt == "dsjson":
            count = _write_jsonl((dsjson_event(d) for d in store.decisions()), Path(tmp))
        else:
            count = _write_jsonl(decision_rows(store), Path(tmp))
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def _write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as file:
        for row in rows:
            file.write(json.dumps(row, allow_nan=False) + "\n")
            count += 1
    return count


def _write_parquet(rows: Iterable[dict[str, Any]], path: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("Parquet export needs pyarrow: pip install 'tipbench[policy]'") from None
    source = pa.struct(
        [
            ("model", pa.string()),
            ("prompt_version", pa.string()),
            ("experiment", pa.string()),
            ("run_id", pa.string()),
            ("tip_index", pa.int64()),
        ]
    )
    candidate = pa.struct(
        [
            ("tip_id", pa.string()),
            ("category", pa.string()),
            ("score", pa.float64()),
            ("probability", pa.float64()),
            ("source", source),
        ]
    )
    settings = pa.struct(
        [
            ("epsilon", pa.float64()),
            ("alpha", pa.float64()),
            ("floor", pa.float64()),
            ("ridge", pa.float64()),
            ("seed", pa.int64()),
        ]
    )
    policy_fields = [
        ("feature_version", pa.string()),
        ("features", pa.list_(pa.float64())),
        ("candidates", pa.list_(candidate)),
        ("tip_id", pa.string()),
        ("category", pa.string()),
        ("propensity", pa.float64()),
        ("settings", settings),
    ]
    context = pa.struct(
        [
            ("local_hour", pa.float64()),
            ("weekday", pa.int64()),
            ("open_tasks", pa.int64()),
            ("minutes_to_deadline", pa.float64()),
            ("tips_today", pa.int64()),
        ]
    )
    schema = pa.schema(
        [
            ("decision_id", pa.string()),
            ("sequence", pa.int64()),
            ("time", pa.string()),
            ("user_id", pa.string()),
            ("event_id", pa.string()),
            ("policy", pa.string()),
            ("route", pa.string()),
            ("context", context),
            ("feature_names", pa.list_(pa.string())),
            *policy_fields,
            ("shadows", pa.list_(pa.struct([("policy", pa.string()), *policy_fields]))),
            ("reward", pa.float64()),
            ("event", pa.string()),
            ("dwell_s", pa.float64()),
            ("rewarded_at", pa.string()),
        ]
    )
    count = 0
    pages = iter(rows)
    with pq.ParquetWriter(path, schema) as writer:
        while page := list(itertools.islice(pages, PARQUET_PAGE)):
            writer.write_table(pa.Table.from_pylist(page, schema=schema))
            count += len(page)
        if count == 0:  # an empty log is still a readable file with the schema
            writer.write_table(schema.empty_table())
    return count
