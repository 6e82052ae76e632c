"""Logged traffic as arrays: what off-policy evaluation reads from a decision log.

The input is the decision log's rows as `tipbench policy log export --format jsonl` writes
them (a state store's log is read as the same rows). Every row is checked first (`_checks`),
and every decision id must be new (`_duplicates`). Only `/serve` decisions count unless
`/score` ones are asked for: a `/score/{policy}` decision was made by the policy named, not
the live one, and has no shadows, so that it would enter a shadow's off-policy estimate as
the policy's own on-policy traffic (weights of 1). Only rewarded decisions count. For each,
the arrays keep: the policy that decided and its probability of every candidate (the logging
policy), the candidate shown and its reward, the candidates' categories, the features (the
richest vector any policy logged for the request: v2 if one was logged, else v1; v1 is the
start of v2), for every policy that scored the request as a shadow its probabilities, and
each candidate's `source` as the log holds it (where the tip came from; None: not given).

`traffic_chunks` reads a log of any length as consecutive `Traffic` chunks of at most
`CHUNK_DECISIONS` rewarded decisions, holding one chunk at a time (the estimators keep sums,
`_sums`); `traffic_from_rows` reads a small log as one. Rows may offer different numbers of
candidates: a chunk's arrays are padded to its largest, with zero probability (and `mask`
False) on the padding.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tipbench._errors import ConfigError
from tipbench.evaluate._checks import CheckedRow, check_row, decision_label
from tipbench.evaluate._duplicates import DecisionIds, decision_hash
from tipbench.evaluate._log_file import LogFile
from tipbench.policies import FEATURES_V1, FEATURES_V2, Vector

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
CHUNK_DECISIONS = 4096  # rewarded decisions per chunk: about 10 MB of a chunk's rows


@dataclass(frozen=True)
class Traffic:
    """n rewarded decisions with up to K candidates each."""

    decider: tuple[str, ...]  # (n,) the policy that chose what was shown
    route: tuple[str, ...]  # (n,) `serve` (the live policy then) or `score`
    user: tuple[str, ...]  # (n,)
    reward: Vector  # (n,)
    chosen: Ints  # (n,) index of the shown candidate
    mask: Bools  # (n, K) real candidates
    categories: tuple[tuple[str, ...], ...]  # (n, ≤K) the candidates' categories
    logging: Vector  # (n, K) the decider's probabilities
    targets: Mapping[str, Vector]  # policy → (n, K) its probabilities, NaN rows where unknown
    x_v1: Vector  # (n, 7)
    x_v2: Vector  # (n, 12), NaN rows where no v2 vector was logged
    decisions: int  # rows read, rewarded or not (`/score` ones only if asked for)
    score_left_out: int = 0  # `/score` decisions read and left out
    fold: Ints | None = None  # (n,) each decision's fold (0 or 1, by its id); None: by rank
    sources: tuple[tuple[Mapping[str, Any] | None, ...], ...] = ()  # (n, ≤K) as logged

    @property
    def n(self) -> int:
        return len(self.reward)

    @property
    def policies(self) -> tuple[str, ...]:
        """Every policy the log knows probabilities of (as decider or shadow)."""
        return tuple(self.targets)

    def propensity(self) -> Vector:
        """(n,) the logged probability of each shown candidate."""
        shown: Vector = self.logging[np.arange(self.n), self.chosen]
        return shown

    def category_codes(self, categories: tuple[str, ...]) -> Ints:
        """(n, K) category indices into `categories` (0 on the padding)."""
        index = {c: i for i, c in enumerate(categories)}
        known = {names: [index[c] for c in names] for names in set(self.categories)}
        codes = np.zeros(self.mask.shape, dtype=np.int64)
        if self.mask.all():  # as many candidates in every decision
            if self.n:
                codes[:] = [known[names] for names in self.categories]
            return codes
        for row, names in enumerate(self.categories):
            codes[row, : len(names)] = known[names]
        return codes

    @property
    def category_names(self) -> tuple[str, ...]:
        return tuple(sorted({c for names in set(self.categories) for c in names}))


class _Builder:
    """Rows in, `Traffic` chunks out (`take`); decision ids checked across every chunk."""

    def __init__(self, include_score: bool = False, unit: str = "row") -> None:
        self.include_score = include_score
        self.unit = unit
        self.ids = DecisionIds(unit)
        self._reset()

    def _reset(self) -> None:
        self.score_left_out = 0
        self.decider: list[str] = []
        self.route: list[str] = []
        self.user: list[str] = []
        self.reward: list[float] = []
        self.chosen: list[int] = []
        self.categories: list[tuple[str, ...]] = []
        self.sources: list[tuple[Mapping[str, Any] | None, ...]] = []
        self.logging: list[list[float]] = []
        self.targets: dict[str, dict[int, list[float]]] = {}
        self.x_v1: list[list[float]] = []
        self.x_v2: dict[int, list[float]] = {}
        self.decisions = 0
        self.read_ids: list[str] = []
        self.read_digests: list[bytes] = []
        self.fold: list[int] = []
        self.read_rows: list[int] = []
        self.read_rewards: list[float | None] = []

    @property
    def rewarded(self) -> int:
        return len(self.reward)

    def add(self, row: Mapping[str, Any], line: int) -> None:
        checked = check_row(row, line, self.unit)
        digest = decision_hash(row["decision_id"])
        self.read_ids.append(row["decision_id"])
        self.read_digests.append(digest)
        self.read_rows.append(line)
        self.read_rewards.append(row.get("reward"))
        if row.get("route", "serve") == "score" and not self.include_score:
            self.score_left_out += 1
            return
        self.decisions += 1
        if row.get("reward") is None:
            return
        try:
            self._add(row, checked)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            where = decision_label(row, line, self.unit)
            raise ConfigError(f"{where}: not a decision-log row ({exc!r})") from None
        self.fold.append(digest[0] & 1)

    def _add(self, row: Mapping[str, Any], checked: CheckedRow) -> None:
        # One row per decision of a possibly huge log: plain list work, numbers converted
        # once, by numpy, when the arrays are built.
        tips = checked.tips
        position = len(self.reward)
        policy = row["policy"]
        self.decider.append(policy)
        self.route.append(row.get("route", "serve"))
        self.user.append(row.get("user_id", ""))
        self.reward.append(row["reward"])
        self.chosen.append(tips.index(row["tip_id"]))
        candidates = row["candidates"]
        self.categories.append(tuple([c["category"] for c in candidates]))
        self.sources.append(tuple([c.get("source") for c in candidates]))
        self.logging.append(checked.probabilities)
        self.targets.setdefault(policy, {})[position] = checked.probabilities
        v2 = row["features"] if row["feature_version"] == "v2" else None
        for shadow, (name, probabilities) in zip(
            row.get("shadows") or (), checked.shadows, strict=True
        ):
            self.targets.setdefault(name, {})[position] = probabilities
            if v2 is None and shadow["feature_version"] == "v2":
                v2 = shadow["features"]
        self.x_v1.append(row["features"][: len(FEATURES_V1)])
        if v2 is not None:
            if len(v2) != len(FEATURES_V2):
                raise ValueError(f"a v2 vector of {len(v2)} features")
            self.x_v2[position] = v2

    def take(self) -> Traffic:
        """The rows added since the last `take` as a chunk (their ids checked first).

        Raises:
            LogRowError: a decision id read before, naming it and both rows.
        """
        self.ids.add(self.read_ids, self.read_digests, self.read_rows, self.read_rewards)
        try:
            traffic = self._arrays()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the log holds a number that is not one ({exc})") from None
        self._reset()
        return traffic

    def _arrays(self) -> Traffic:
        n = len(self.reward)
        sizes = [len(c) for c in self.categories]
        k = max(sizes, default=1)
        uniform = all(size == k for size in sizes)
        mask = np.zeros((n, k), dtype=np.bool_)
        if uniform and n:  # the usual log: as many candidates in every decision
            mask[:] = True
            logging = np.array(self.logging, dtype=np.float64)
        else:
            logging = np.zeros((n, k))
            for row, probabilities in enumerate(self.logging):
                mask[row, : len(probabilities)] = True
                logging[row, : len(probabilities)] = probabilities
        targets = {}
        for policy, rows in self.targets.items():
            values = np.full((n, k), np.nan)
            if uniform and rows:
                index = np.fromiter(rows.keys(), dtype=np.int64, count=len(rows))
                values[index] = np.array(list(rows.values()), dtype=np.float64)
            else:
                for row, probabilities in rows.items():
                    values[row] = 0.0
                    values[row, : len(probabilities)] = probabilities
            targets[policy] = values
        x_v2 = np.full((n, len(FEATURES_V2)), np.nan)
        if self.x_v2:
            index = np.fromiter(self.x_v2.keys(), dtype=np.int64, count=len(self.x_v2))
            x_v2[index] = np.array(list(self.x_v2.values()), dtype=np.float64)
        return Traffic(
            decider=tuple(map(str, self.decider)),
            route=tuple(map(str, self.route)),
            user=tuple(map(str, self.user)),
            reward=np.array(self.reward, dtype=np.float64),
            chosen=np.array(self.chosen, dtype=np.int64),
            mask=mask,
            categories=tuple(tuple(map(str, names)) for names in self.categories),
            logging=logging,
            targets=targets,
            x_v1=np.array(self.x_v1, dtype=np.float64).reshape(n, len(FEATURES_V1)),
            x_v2=x_v2,
            decisions=self.decisions,
            score_left_out=self.score_left_out,
            fold=np.array(self.fold, dtype=np.int64),
            sources=tuple(self.sources),
        )


def _numbered(
    rows: Iterable[Mapping[str, Any]],
) -> tuple[Iterator[tuple[int, Mapping[str, Any]]], str]:
    """Each row with its number, and what the number counts (a file's lines, else rows)."""
    if isinstance(rows, LogFile):
        return iter(rows.numbered()), rows.unit
    return enumerate(rows, start=1), "row"


def traffic_chunks(
    rows: Iterable[Mapping[str, Any]],
    *,
    include_score: bool = False,
    size: int = CHUNK_DECISIONS,
) -> Iterator[Traffic]:
    """The rewarded decisions of a log's rows (in log order) in chunks of at most `size`:
    its `/serve` decisions, and its `/score` ones with `include_score`. The last chunk holds
    the count of the rows after the last full one (it may have no rewarded decision); the
    chunks' `decisions` and `score_left_out` add up to the log's.

    Raises:
        ConfigError: naming the first row that is not a decision-log row, or that breaks a
            rule of the log (`LogRowError`, naming the decision and the field, or a decision
            id read twice with both rows).
    """
    numbered, unit = _numbered(rows)
    builder = _Builder(include_score, unit)
    for number, row in numbered:
        builder.add(row, number)
        if builder.rewarded >= size:
            yield builder.take()
    yield builder.take()


def traffic_from_rows(rows: Iterable[Mapping[str, Any]], *, include_score: bool = False) -> Traffic:
    """Every rewarded decision of a (small) log's rows as one `Traffic` (`traffic_chunks`
    reads a log of any length in bounded memory).

    Raises:
        ConfigError: as `traffic_chunks`.
    """
    return next(traffic_chunks(rows, include_score=include_score, size=sys.maxsize))
