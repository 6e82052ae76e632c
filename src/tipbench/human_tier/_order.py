"""The judging order of an experiment: the record that makes its human scores a known sample.

The combined tier may use a human score only if the run had a known probability of being
scored. An order, recorded once per experiment in MLflow when a judge file is first exported
or the judging page first opened, makes that so:

- every run gets a clock ``E / rate``, E drawn from a seeded hash of the run id (so a run
  collected later gets its own independent place, and the record stays small); a run's
  rate is 1, or ``1 + uncertainty`` in an active order (the share of its candidates the
  automatic judge had to be asked again, frozen when the order starts);
- within each cell the runs queue by clock; what counts is each queue's scored prefix
  (`human_tier._active.queue_inclusion`);
- runs a human had scored before the order began stand for themselves (``known``);
- runs of a collection that came after the order began (collect's parent run, one per
  `tipbench collect`) queue in a **stratum** of their own, one per collection: within a
  cell each stratum has its own queue, and the stratum with the least share scored is
  served first. A prefix scored before they came stays a prefix (no label is wasted), and
  each stratum's scored prefix is a sample with known probabilities, as before.

An order is kept until the judge asks for the other kind (`--order`): a new one then starts,
and what was scored before it is known. The record is one run tagged
``tipbench.kind=judging_order``; its run ids are kept in tags of at most `_CHUNK` characters
(read in the same search as any run, without downloading an artifact).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal, cast

from tipbench.tracking import (
    KIND_TAG,
    PARENT_RUN_TAG,
    CellRun,
    CellTag,
    RunRecord,
    TrackingStore,
    record_run,
)

__all__ = [
    "DEFAULT_ORDER",
    "KIND_JUDGING_ORDER",
    "ORDERS",
    "JudgingOrder",
    "Order",
    "current_order",
    "ensure_order",
    "judge_uncertainty",
]

Order = Literal["active", "uniform"]
ORDERS: tuple[Order, ...] = ("active", "uniform")
DEFAULT_ORDER: Order = "active"
KIND_JUDGING_ORDER = "judging_order"
_KIND, _SEED, _CREATED = "order", "order_seed", "order_created_at"
_KNOWN, _RATES, _COLLECTIONS = "order_known", "order_rates", "order_collections"
_CHUNK = 4800  # characters per tag (MLflow keeps 5000 on every store)


def judge_uncertainty(run: CellRun) -> float:
    """How unsure the automatic judge was about a run, in [0, 1]: the share of its
    candidates whose first answer it could not give (asked again at a higher temperature)."""
    raw = run.extra_tags.get(CellTag.AUTO_JUDGE_RESAMPLED)
    if not raw:
        return 0.0
    try:
        resampled = len(json.loads(raw))
    except (ValueError, TypeError):
        return 0.0
    return min(1.0, resampled / max(run.candidate_count, resampled, 1))


@dataclass(frozen=True)
class JudgingOrder:
    """One experiment's judging order (see the module's description).

    Attributes:
        kind: "active" (the cell to serve chosen by the comparisons still open) or
            "uniform" (one shuffled queue).
        seed: The seed of every run's clock.
        created_at: When the order began (ISO 8601, UTC).
        known: Runs a human had scored before: they stand for themselves.
        rates: Runs whose rate is not 1.
        run_id: The MLflow run that records it.
        collections: The collections whose runs the order began with (None: an order
            recorded before strata existed; all its runs queue as one stratum).
    """

    kind: Order
    seed: int
    created_at: str
    known: frozenset[str] = frozenset()
    rates: Mapping[str, float] = field(default_factory=dict)
    run_id: str = ""
    collections: frozenset[str] | None = None

    def rate(self, run_id: str) -> float:
        return self.rates.get(run_id, 1.0)

    def stratum(self, run: CellRun) -> str:
        """The run's stratum: "" for the runs the order began with, else its collection."""
        collection = run.extra_tags.get(PARENT_RUN_TAG, "")
        if self.collections is None or collection in self.collections:
            return ""
        return collection

    def clock(self, run_id: str) -> float:
        """The run's place in its queue: ``E / rate``, E ~ Exp(1) from a hash of the run id."""
        digest = hashlib.sha256(f"{self.seed}:{run_id}".encode()).digest()
        uniform = (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
        return -math.log(uniform) / self.rate(run_id)

    def tags(self) -> dict[str, str]:
        """What the record's run is tagged with."""
        tags = {
            KIND_TAG: KIND_JUDGING_ORDER,
            _KIND: self.kind,
            _SEED: str(self.seed),
            _CREATED: self.created_at,
        }
        tags |= _chunked(_KNOWN, ",".join(sorted(self.known)))
        rates = json.dumps(dict(sorted(self.rates.items())), separators=(",", ":"))
        tags |= _chunked(_RATES, rates)
        if self.collections is not None:
            tags |= _chunked(_COLLECTIONS, ",".join(sorted(self.collections)))
        return tags

    @classmethod
    def of(cls, run_id: str, tags: Mapping[str, str]) -> JudgingOrder:
        known = _joined(tags, _KNOWN)
        collections = _joined(tags, _COLLECTIONS) if f"{_COLLECTIONS}.0" in tags else None
        return cls(
            kind=cast(Order, tags.get(_KIND, DEFAULT_ORDER)),
            seed=int(tags.get(_SEED, "0")),
            created_at=tags.get(_CREATED, ""),
            known=frozenset(known.split(",")) if known else frozenset(),
            rates={k: float(v) for k, v in json.loads(_joined(tags, _RATES) or "{}").items()},
            run_id=run_id,
            collections=None
            if collections is None
            else frozenset(filter(None, collections.split(","))),
        )

    def describe(self) -> str:
        when = self.created_at.replace("T", " ").replace("+00:00", " UTC")
        return f"{self.kind} order since {when}"


def _chunked(name: str, text: str) -> dict[str, str]:
    parts = [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
    return {f"{name}.{i}": part for i, part in enumerate(parts)}


def _joined(tags: Mapping[str, str], name: str) -> str:
    parts = []
    i = 0
    while f"{name}.{i}" in tags:
        parts.append(tags[f"{name}.{i}"])
        i += 1
    return "".join(parts)


def current_order(store: TrackingStore, experiment_id: str) -> JudgingOrder | None:
    """The experiment's judging order (the newest), or None if none began."""
    found = store.find(experiment_id, {KIND_TAG: KIND_JUDGING_ORDER}, limit=1)
    return JudgingOrder.of(found[0].run_id, found[0].tags) if found else None


def ensure_order(
    store: TrackingStore,
    experiment_id: str,
    runs: Iterable[CellRun],
    kind: Order | None = None,
    seed: int | None = None,
) -> JudgingOrder:
    """The experiment's order of `kind` (default: the current one, else an active one):
    the current order if it is of that kind, else a new one, recorded now.

    Args:
        store: The MLflow store.
        experiment_id: The experiment.
        runs: Its judgeable cell runs (those scored by a human become ``known`` in a new
            order; the automatic judge's uncertainty sets an active order's rates).
        kind: The order wanted.
        seed: The seed of a new order's clocks [default: a random one].

    Raises:
        TrackingError: If the order cannot be recorded.
    """
    current = current_order(store, experiment_id)
    if current is not None and kind in (None, current.kind):
        return current
    wanted: Order = kind or DEFAULT_ORDER
    runs = list(runs)
    rates = (
        {run.run_id: 1.0 + u for run in runs if (u := judge_uncertainty(run)) > 0}
        if wanted == "active"
        else {}
    )
    order = JudgingOrder(
        kind=wanted,
        seed=secrets.randbelow(2**31) if seed is None else seed,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        known=frozenset(run.run_id for run in runs if run.judged_by("human")),
        rates=rates,
        collections=frozenset(filter(None, (run.extra_tags.get(PARENT_RUN_TAG) for run in runs))),
    )
    record = RunRecord(
        run_name=f"judging order ({wanted})",
        params={},
        tags=order.tags(),
        metrics={"known_runs": float(len(order.known))},
        artifacts={},
    )
    run_id = record_run(store, experiment_id, record, "the judging order")
    # Two first visits at once may both start one: every reader then takes the newest.
    newest = current_order(store, experiment_id)
    return newest or replace(order, run_id=run_id)
