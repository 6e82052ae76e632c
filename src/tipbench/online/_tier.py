"""The online tier: each source of tips (`model|prompt_version`) measured by what users did
with its tips, from the policy service's decision log.

Per source, the doubly-robust estimate of the value of serving its tips (`_sources`: the
estimand) with its 95% interval and effective sample size, SNIPS beside it (the
propensity-corrected mean reward of the decisions that served its tips), and "not enough
traffic" where the log cannot tell (fewer than `MIN_DECISIONS` rewarded decisions offering
its tips, or an effective sample below `MIN_ESS`) or "no overlap" (the logger could not show
its tips). The estimates are `tipbench.evaluate`'s: the log is read once, in chunks, with its
checks (a decision counted twice is refused, a bad row named), clipped weights flagged
"biased: clipped".

Sources are ranked by their estimate. The leader is compared with each other estimated source
paired by decision, and a source is "behind" where that difference's interval lies below 0,
else "undecided". The leader is known only once the log has been read: up to `PAIRED_SOURCES`
sources, every pair is contrasted in the one reading (cheaper than reading the log again);
with more, the log is read a second time for the leader's comparisons. `compare_sources`
compares two named sources the same way in one reading (what promote's online condition
asks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from tipbench._errors import ConfigError
from tipbench.evaluate import (
    MIN_DECISIONS,
    MIN_ESS,
    EvaluationReport,
    PolicyEvaluation,
    evaluate,
    traffic_chunks,
)
from tipbench.online._sources import SourceCounts, SourceRun, SourceTargets, pair_name
from tipbench.policy_service import UNKNOWN_SOURCE
from tipbench.stats import Estimate, json_number

DecisionLog = Iterable[Mapping[str, Any]]
"""A decision log's rows as `policy log export` writes them; the online tier reads it twice
to rank (`evaluate.read_log(path)`, `state_log(store)` and lists can be read again)."""
OnlineStatus = Literal["estimated", "not enough traffic", "no overlap"]
Standing = Literal["leader", "behind", "undecided", "not enough traffic", "no overlap"]
PAIRED_SOURCES = 4
"""Sources whose every pair is compared in the first reading (6 contrasts: each costs about
a fifth of reading the log again)."""
ESTIMATOR = "dr"
"""The estimate the tier ranks by: doubly robust, unbiased under overlap whatever the reward
model, and never biased by the clip (its correction multiplies residuals only)."""


class RunCheck(Protocol):
    """Checks the cell runs a log's provenance names (`TrackedRuns`): None if `run` is as the
    provenance says, else why not (one line)."""

    def __call__(self, run: SourceRun) -> str | None: ...


@dataclass(frozen=True)
class OnlineRow:
    """One source of the online tier.

    Attributes:
        source: `model|prompt_version`, or "unknown source".
        status: "estimated", "not enough traffic" or "no overlap".
        reason: Why there is no estimate.
        decisions: Rewarded decisions where the source offered a tip.
        served: Of them, those that served its tip.
        ess: The effective sample size of its estimate.
        value: The doubly-robust estimate with its 95% interval (None: no estimate).
        snips: SNIPS (None: none, or "biased: clipped").
        biased: Estimators the clip biased ("biased: clipped").
        more_needed: About how many more rewarded decisions an estimate needs.
        rank: 1 for the highest estimate (None: no estimate).
        standing: "leader", "behind" or "undecided" against the leader, else the status.
        vs_leader: This source − the leader, paired by decision (None: the leader, or none).
    """

    source: str
    status: OnlineStatus
    reason: str
    decisions: int
    served: int
    ess: float
    value: Estimate | None
    snips: Estimate | None
    biased: tuple[str, ...] = ()
    more_needed: int | None = None
    rank: int | None = None
    standing: Standing = "not enough traffic"
    vs_leader: Estimate | None = None
    served_mean: float = math.nan  # the plain mean reward of its served tips (uncorrected)

    @property
    def model(self) -> str | None:
        return None if self.source == UNKNOWN_SOURCE else self.source.partition("|")[0]

    @property
    def prompt_version(self) -> str | None:
        return None if self.source == UNKNOWN_SOURCE else self.source.partition("|")[2]

    def to_dict(self) -> dict[str, Any]:
        def estimate(e: Estimate | None) -> dict[str, Any] | None:
            return None if e is None else e.to_dict()

        return {
            "source": self.source,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "rank": self.rank,
            "standing": self.standing,
            "status": self.status,
            "reason": self.reason,
            "decisions": self.decisions,
            "served": self.served,
            "served_mean": json_number(self.served_mean),
            "ess": json_number(self.ess),
            "estimator": ESTIMATOR,
            "value": estimate(self.value),
            "snips": estimate(self.snips),
            "biased": list(self.biased),
            "more_needed": self.more_needed,
            "vs_leader": estimate(self.vs_leader),
        }


@dataclass(frozen=True)
class OnlineTier:
    """Every source of a decision log, ranked by what users did with its tips."""

    rows: tuple[OnlineRow, ...]
    decisions: int  # rows of the log read (the `/serve` ones unless `/score` ones were asked)
    rewarded: int
    live: str | None  # the policy that served last
    min_decisions: int = MIN_DECISIONS
    min_ess: float = MIN_ESS

    @property
    def leader(self) -> OnlineRow | None:
        return next((r for r in self.rows if r.standing == "leader"), None)

    def row(self, source: str) -> OnlineRow | None:
        return next((r for r in self.rows if r.source == source), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": "online",
            "estimator": ESTIMATOR,
            "decisions": self.decisions,
            "rewarded": self.rewarded,
            "live": self.live,
            "min_decisions": self.min_decisions,
            "min_ess": self.min_ess,
            "rows": [r.to_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class SourceComparison:
    """Two sources compared paired by decision: `a` − `b` on the decisions offering both."""

    a: OnlineRow
    b: OnlineRow
    decisions: int
    difference: Estimate | None
    reason: str = ""


def _status(evaluation: PolicyEvaluation) -> OnlineStatus:
    if evaluation.status == "estimated":
        return "estimated"
    return "no overlap" if evaluation.status == "no overlap" else "not enough traffic"


def _row(source: str, evaluation: PolicyEvaluation | None, counts: SourceCounts) -> OnlineRow:
    served_mean = counts.served_reward / counts.served if counts.served else math.nan
    if evaluation is None:  # offered only on decisions never rewarded
        return OnlineRow(
            source,
            "not enough traffic",
            "no rewarded decision offered its tips",
            0,
            0,
            math.nan,
            None,
            None,
            more_needed=MIN_DECISIONS,
        )
    status = _status(evaluation)
    estimates = evaluation.estimates
    return OnlineRow(
        source=source,
        status=status,
        reason=evaluation.reason,
        decisions=evaluation.decisions,
        served=counts.served,
        ess=evaluation.ess,
        value=estimates.get(ESTIMATOR),
        snips=estimates.get("snips"),
        biased=evaluation.biased,
        more_needed=evaluation.more_needed,
        standing=status if status != "estimated" else "undecided",
        served_mean=served_mean,
    )


def _read(
    log: DecisionLog,
    targets: SourceTargets,
    *,
    include_score: bool,
    min_decisions: int,
    min_ess: float,
    contrasts: Mapping[str, tuple[str, str]] | None = None,
    sources: bool = True,
) -> EvaluationReport:
    chunks = (targets(c) for c in traffic_chunks(log, include_score=include_score))
    return evaluate(
        chunks,
        None if sources else [],
        min_decisions=min_decisions,
        min_ess=min_ess,
        contrasts=contrasts,
    )


def _check_runs(targets: SourceTargets, runs: RunCheck | None) -> None:
    if runs is None:
        return
    for run in targets.runs.values():
        problem = runs(run)
        if problem is not None:
            raise ConfigError(f"decision log: a tip's source names run {run.run_id!r}: {problem}")


def online_tier(
    log: DecisionLog,
    *,
    runs: RunCheck | None = None,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
    include_score: bool = False,
) -> OnlineTier:
    """The online tier of a decision log (see the module).

    Raises:
        ConfigError: a bad row of the log, a decision counted twice (as `policy evaluate`),
            or a provenance naming a run that `runs` does not know.
    """
    targets = SourceTargets(paired=PAIRED_SOURCES)
    report = _read(
        log,
        targets,
        include_score=include_score,
        min_decisions=min_decisions,
        min_ess=min_ess,
        contrasts=targets.pairs,
    )
    _check_runs(targets, runs)
    evaluations = {e.policy: e for e in report.policies}
    rows = [_row(s, evaluations.get(s), c) for s, c in targets.counts.items()]
    paired = {c.policy: c for c in report.contrasts}
    rows = _ranked(log, rows, paired, include_score=include_score, min_decisions=min_decisions)
    return OnlineTier(
        tuple(rows), report.decisions, report.rewarded, report.live, min_decisions, min_ess
    )


def _read_pair(paired: Mapping[str, PolicyEvaluation], a: str, b: str) -> bool:
    """The contrast of `a` and `b` was read (either way round)."""
    return pair_name(a, b) in paired or pair_name(b, a) in paired


def _versus(paired: Mapping[str, PolicyEvaluation], a: str, b: str) -> Estimate | None:
    """`a` − `b` from the contrasts read (b − a negated); None where it has no estimate."""
    if pair_name(a, b) in paired:
        return paired[pair_name(a, b)].estimates.get(ESTIMATOR)
    found = paired[pair_name(b, a)].estimates.get(ESTIMATOR) if pair_name(b, a) in paired else None
    if found is None:
        return None
    return replace(found, value=-found.value, low=-found.high, high=-found.low)


def _ranked(
    log: DecisionLog,
    rows: list[OnlineRow],
    paired: Mapping[str, PolicyEvaluation],
    *,
    include_score: bool,
    min_decisions: int,
) -> list[OnlineRow]:
    """Rows by estimate, the leader compared with each other estimated source (from the
    contrasts read with the tier, else in a second reading of the log); the rest after them,
    by name."""
    estimated = sorted(
        (r for r in rows if r.value is not None), key=lambda r: -(r.value.value if r.value else 0)
    )
    rest = sorted((r for r in rows if r.value is None), key=lambda r: r.source)
    if not estimated:
        return rest
    leader = estimated[0]
    others = [r.source for r in estimated[1:]]
    missing = {s: (s, leader.source) for s in others if not _read_pair(paired, s, leader.source)}
    if missing:
        targets = SourceTargets(only={leader.source, *missing})
        report = _read(
            log,
            targets,
            include_score=include_score,
            min_decisions=min_decisions,
            min_ess=0.0,
            contrasts=missing,
            sources=False,
        )
        paired = {**paired, **{pair_name(*missing[c.policy]): c for c in report.contrasts}}
    ranked = [_with(leader, 1, "leader", None)]
    for rank, row in enumerate(estimated[1:], start=2):
        vs = _versus(paired, row.source, leader.source)
        behind = vs is not None and vs.has_interval and vs.high < 0
        ranked.append(_with(row, rank, "behind" if behind else "undecided", vs))
    return ranked + rest


def _with(row: OnlineRow, rank: int, standing: Standing, vs: Estimate | None) -> OnlineRow:
    return replace(row, rank=rank, standing=standing, vs_leader=vs)


def compare_sources(
    log: DecisionLog,
    a: str,
    b: str,
    *,
    runs: RunCheck | None = None,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
    include_score: bool = False,
) -> SourceComparison:
    """Source `a` − source `b`, paired by the decisions that offered both, in one reading of
    the log; no difference unless both have an estimate of their own.

    Raises:
        ConfigError: `a` and `b` are the same source; as `online_tier`.
    """
    if a == b:
        raise ConfigError(f"source {a!r} is on both sides of the paired comparison")
    targets = SourceTargets(only={a, b})
    report = _read(
        log,
        targets,
        include_score=include_score,
        min_decisions=min_decisions,
        min_ess=min_ess,
        contrasts={f"{a} − {b}": (a, b)},
    )
    _check_runs(targets, runs)
    evaluations = {e.policy: e for e in report.policies}
    side = {s: _row(s, evaluations.get(s), targets.counts.get(s, SourceCounts())) for s in (a, b)}
    contrast = report.contrasts[0]
    missing = [s for s in (a, b) if s not in targets.counts]
    short = [s for s in (a, b) if side[s].status != "estimated"]
    if missing:
        reason = f"no traffic offered {' or '.join(missing)}"
    elif short:
        reason = "; ".join(f"{s}: {side[s].status} ({side[s].reason})" for s in short)
    elif contrast.status != "estimated":
        reason = f"decisions offering both: {contrast.reason}"
    else:
        return SourceComparison(
            side[a], side[b], contrast.decisions, contrast.estimates.get(ESTIMATOR)
        )
    return SourceComparison(side[a], side[b], contrast.decisions, None, reason)
