"""Off-policy estimates of a policy's mean reward from logged traffic: IPS, SNIPS and DR.

For the n rewarded decisions where the target policy's probabilities π are known, with the
logging policy's probabilities p, the shown candidate a_i and its reward r_i, the weight is
w_i = min(π_i(a_i)/p_i(a_i), M) (`CLIP_WEIGHT`; the share clipped is reported), and

    IPS    V = (1/n)·Σ w_i·r_i                   se = √(max(var(w·r), m₂ − V²)/n)
    SNIPS  V = Σ w_i·r_i / Σ w_i                 se = √Σ(w_i·(r_i − V))² / Σ w_i   (delta method)
    DR     V = (1/n)·Σ [Σ_j π_i(j)·q_i(j) + w_i·(r_i − q_i(a_i))]     se = sd/√n

where m₂ = (1/n)·Σ_i Σ_j π_i(j)²/p_i(j)·q_i(j) is IPS's expected second moment under the
reward model (a sample holds too few of the rare large weights for its own variance to be
trusted), with q the reward model's predictions, cross-fitted (`reward_model`): row i's come from a
model that never saw row i, so DR stays unbiased when q is wrong. Each interval is V ± 1.96·se
(95%). The effective sample size is (Σw)²/Σw².

Assumptions: the logged p are the probabilities the decisions were really drawn with (the
service logs them exactly), and every candidate the target may show had p > 0 (overlap; the
policies' exploration floors guarantee it). When the target puts probability on candidates
the logger could not show, or the weights leave too few effective decisions, the policy is
reported as `no overlap`; with fewer than `MIN_DECISIONS` decisions as `too little data`;
neither gets an estimate. Where more traffic would give one, `more_needed` says about how many
more rewarded decisions (with the policy's probabilities, at the log's rate): the missing ones
below `MIN_DECISIONS`, or as many as raise the effective sample size to `MIN_ESS` (it grows in
proportion to the decisions); none where the policy's mass on never-shown tips is the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tipbench.evaluate._traffic import Ints, Traffic
from tipbench.policies import Vector, predictions, ridge_inverse, ridge_theta
from tipbench.stats import Estimate, json_number

ESTIMATORS = ("ips", "snips", "dr")
CLIP_WEIGHT = 100.0
MIN_DECISIONS = 100
MIN_ESS = 30.0
OVERLAP_TOLERANCE = 1e-3  # target probability allowed on candidates the logger never shows
REWARD_MODEL_FOLDS = 2
REWARD_MODEL_RIDGE = 1.0
Status = Literal["estimated", "too little data", "no overlap"]


@dataclass(frozen=True)
class PolicyEvaluation:
    """What the log says about one policy."""

    policy: str
    source: Literal["logged", "replayed"]  # its probabilities: from the log, or replayed
    status: Status
    reason: str
    decisions: int  # rewarded decisions where its probabilities are known
    ess: float
    clipped: float  # share of weights clipped at CLIP_WEIGHT
    estimates: dict[str, Estimate]  # estimator → estimate (empty unless estimated)
    rows: Ints = field(repr=False, compare=False)  # which rows of the traffic
    dr_terms: Vector = field(repr=False, compare=False)  # DR's per-row terms
    more_needed: int | None = None  # more rewarded decisions an estimate needs (None: none do)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "source": self.source,
            "status": self.status,
            "reason": self.reason,
            "decisions": self.decisions,
            "ess": json_number(self.ess),
            "clipped": json_number(self.clipped),
            "more_needed": self.more_needed,
            "estimates": {
                name: estimate.to_dict() for name, estimate in self.estimates.items()
            },
        }


def reward_model(
    traffic: Traffic, folds: int = REWARD_MODEL_FOLDS, ridge: float = REWARD_MODEL_RIDGE
) -> Vector:
    """(n, K) cross-fitted predictions of every candidate's reward.

    A ridge regression per category on the logged features (v2 where every decision has a v2
    vector, else v1), as the policies' own models; the log is split into `folds` consecutive
    blocks of rows and each block is predicted by the model fitted on the others. Categories
    the other blocks never showed are predicted 0.
    """
    x = traffic.x_v2 if not np.isnan(traffic.x_v2).any() else traffic.x_v1
    names = traffic.category_names
    codes = traffic.category_codes(names)
    rows = np.arange(traffic.n)
    shown = codes[rows, traffic.chosen]
    fold = rows * folds // max(traffic.n, 1)
    q = np.zeros(traffic.mask.shape)
    for f in range(folds):
        train, test = fold != f, fold == f
        theta = np.zeros((len(names), x.shape[1]))
        for c in range(len(names)):
            pick = train & (shown == c)
            xx = x[pick].T @ x[pick]
            rx = x[pick].T @ traffic.reward[pick]
            theta[c] = ridge_theta(ridge_inverse(xx, ridge), rx)
        q[test] = predictions(theta[codes[test]], x[test][:, None, :])
    q[~traffic.mask] = 0.0
    return q


def _interval(value: float, se: float, n: int) -> Estimate:
    return Estimate.normal(value, se, n=n)


def unavailable(policy: str, reason: str) -> PolicyEvaluation:
    """A policy the log cannot say anything about (e.g. one it cannot replay)."""
    empty = np.empty(0, dtype=np.int64)
    return PolicyEvaluation(
        policy, "replayed", "too little data", reason, 0, np.nan, np.nan, {}, empty, np.empty(0)
    )


def evaluate_policy(
    traffic: Traffic,
    policy: str,
    probabilities: Vector,
    q: Vector,
    source: Literal["logged", "replayed"] = "logged",
    *,
    clip: float = CLIP_WEIGHT,
    min_decisions: int = MIN_DECISIONS,
    min_ess: float = MIN_ESS,
) -> PolicyEvaluation:
    """IPS, SNIPS and DR for a target with (n, K) `probabilities` (NaN rows: unknown)."""
    rows = np.flatnonzero(~np.isnan(probabilities).any(axis=1))
    n = len(rows)

    def refused(
        status: Status,
        reason: str,
        ess: float = np.nan,
        clipped: float = np.nan,
        more: int | None = None,
    ) -> PolicyEvaluation:
        return PolicyEvaluation(
            policy, source, status, reason, n, ess, clipped, {}, rows, np.empty(0), more
        )

    if n < min_decisions:
        return refused(
            "too little data",
            f"{n} rewarded decisions with its probabilities; {min_decisions} needed",
            more=min_decisions - n,
        )
    pi, p = probabilities[rows], traffic.logging[rows]
    unseen = float((pi * (p <= 0)).sum() / n)
    if unseen > OVERLAP_TOLERANCE:
        return refused(
            "no overlap",
            f"{unseen:.1%} of its probability is on tips the logging policy never shows",
        )
    shown = traffic.chosen[rows]
    r = traffic.reward[rows]
    raw = pi[np.arange(n), shown] / p[np.arange(n), shown]
    w = np.minimum(raw, clip)
    clipped = float(np.mean(raw > clip))
    ess = float(w.sum() ** 2 / np.sum(w**2)) if w.any() else 0.0
    if ess < min_ess:
        return refused(
            "no overlap",
            f"effective sample size {ess:.1f} below {min_ess:g}: the logging policy rarely "
            "shows what this policy would",
            ess,
            clipped,
            math.ceil(n * min_ess / ess) - n if ess > 0 else None,
        )
    ips_terms = w * r
    qr = q[rows]
    ips_value = float(ips_terms.mean())
    # The second moment IPS has in expectation, by the reward model: Σ_j π(j)²/p(j)·E[r(j)²]
    # with E[r²] ≤ E[r] ≈ q (rewards in [0, 1]). A sample holds too few of the rare large
    # weights, so its variance alone is too small.
    ratio = np.divide(pi**2, p, out=np.zeros_like(pi), where=p > 0)
    second = float(np.mean(np.sum(np.minimum(ratio, clip**2 * p) * np.clip(qr, 0, 1), axis=1)))
    ips_variance = max(float(ips_terms.var(ddof=1)), second - ips_value**2)
    ips = _interval(ips_value, float(np.sqrt(ips_variance / n)), n)
    snips_value = float(ips_terms.sum() / w.sum())
    snips_se = float(np.sqrt(np.sum((w * (r - snips_value)) ** 2)) / w.sum())
    dr_terms = (pi * qr).sum(axis=1) + w * (r - qr[np.arange(n), shown])
    dr = _interval(float(dr_terms.mean()), float(dr_terms.std(ddof=1) / np.sqrt(n)), n)
    estimates = {"ips": ips, "snips": _interval(snips_value, snips_se, n), "dr": dr}
    return PolicyEvaluation(
        policy, source, "estimated", "", n, ess, clipped, estimates, rows, dr_terms
    )
