"""What the estimators keep of a log: sums over its decisions, so that a log of any length is
evaluated in memory that does not grow with it (`_estimators` turns the sums into figures).

Every estimator is a function of per-decision terms that are sums of numbers known when the
decision is read (weights, rewards) and of the reward model's predictions q, which are known
only at the end (the model is fitted on the whole log). The model is linear, q = θ_c·x (a
ridge regression per category c on the features x), so each term is linear in θ and its
square quadratic: for DR, with G_c = Σ_{j of category c} π(j) − w·[the shown tip is of
category c],

    term = Σ_c G_c·(θ_c·x) + w·r = ⟨G ⊗ x, θ⟩ + w·r

and Σ term, Σ term² follow from Σ G⊗x, Σ (G⊗x)(G⊗x)ᵀ, Σ (G⊗x)·w·r and Σ (w·r)², each of
size (categories × features)²: 60² numbers for 5 categories and 12 features, whatever the
log's length. The same holds for the paired difference from the live policy (term − r) and
for the variance floors (`_estimators`), which need Σ_j c_j·q_j and Σ_j c_j·q_j² for a
coefficient c_j per candidate: Σ c⊗x and, per category, Σ c·x·xᵀ.

The reward model is cross-fitted on two folds, drawn by each decision's id (the first bit
of its hash, `decision_hash`: independent of the log's order, so a log whose shown tips
alternate cannot line up with its folds, and the same in every run): a decision's q comes
from the model fitted on the other fold, so it never predicts its own reward. Sums are kept
per fold (and per deciding policy, for the paired difference) and combined at the end with
the other fold's θ.

Features come in two versions: v2 (12) where every rewarded decision has a v2 vector, else
v1 (7); both are summed until a decision without v2 features drops v2.

A **contrast** of two targets A and B (their difference paired by decision, e.g. two sources
of tips) has the same form: π = π_A − π_B and w = w_A − w_B (each weight clipped on its own),
so its DR term is term_A − term_B on every decision where both are known, and the expected
squared weight of candidate j is p(j)·(w_A(j) − w_B(j))² (for one target, min(π²/p, M²·p)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from tipbench.evaluate._traffic import Ints, Traffic
from tipbench.policies import FEATURES_V1, FEATURES_V2, Vector, ridge_inverse, ridge_theta

FOLDS = 2
VERSIONS = {"v1": len(FEATURES_V1), "v2": len(FEATURES_V2)}
PSEUDO_REWARDS = 2.0  # the variance floors' model adds 2 rewards of 1 and 2 of 0 per category


class RewardModels(NamedTuple):
    """(FOLDS, C, d) θ of each fold's reward model: the estimates' (`q`), and the variance
    floors' (`floor`), whose every category also saw 2 rewards of 1 and 2 of 0 at the
    features' bias (Agresti & Coull, 1998: a spread read at a mean estimated from few
    rewards is too small where that mean came out near 0 or 1)."""

    q: Vector
    floor: Vector


def _grow(array: Vector, axes: tuple[int, ...], size: int) -> Vector:
    """`array` padded with zeros along its category `axes` to `size` categories."""
    pad = [(0, 0)] * array.ndim
    for axis in axes:
        pad[axis] = (0, size - array.shape[axis])
    return np.pad(array, pad)


def _by_category(coefficients: Vector, codes: Ints, categories: int) -> Vector:
    """(m, C): each row's coefficients of its candidates summed by category."""
    rows = np.arange(len(codes))
    summed = np.zeros((len(codes), categories))
    for k in range(codes.shape[1]):  # one candidate of each row at a time: no index twice
        summed[rows, codes[:, k]] += coefficients[:, k]
    return summed


def _outer(coefficients: Vector, x: Vector) -> Vector:
    """(m, C, d): each row's coefficient of each category times its features."""
    product: Vector = coefficients[:, :, None] * x[:, None, :]
    return product


class Categories:
    """The categories met so far, each with its index (in order of appearance)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.index)

    def codes(self, traffic: Traffic) -> Ints:
        """(n, K) the chunk's candidates' category indices (0 on the padding), adding any new
        category."""
        for names in dict.fromkeys(traffic.categories):
            for name in names:
                self.index.setdefault(name, len(self.index))
        ordered = tuple(self.index)
        return traffic.category_codes(ordered)


class RewardModelSums:
    """Per feature version and fold, each category's ridge statistics XX (C, d, d) and RX (C, d)
    of the shown candidates' rewards."""

    def __init__(self) -> None:
        self.categories = 0
        self.xx = {v: np.zeros((FOLDS, 0, d, d)) for v, d in VERSIONS.items()}
        self.rx = {v: np.zeros((FOLDS, 0, d)) for v, d in VERSIONS.items()}

    def grow(self, categories: int) -> None:
        if categories > self.categories:
            self.categories = categories
            for v in self.xx:
                self.xx[v] = _grow(self.xx[v], (1,), categories)
                self.rx[v] = _grow(self.rx[v], (1,), categories)

    def drop(self, version: str) -> None:
        self.xx.pop(version, None)
        self.rx.pop(version, None)

    def add(self, shown: Ints, reward: Vector, folds: Ints, xs: dict[str, Vector]) -> None:
        """The rewarded decisions of a chunk: shown category (n,), reward, fold, features."""
        onehot = (shown[:, None] == np.arange(self.categories)).astype(np.float64)
        for v in self.xx:
            x = xs[v]
            d = x.shape[1]
            for f in range(FOLDS):
                pick = folds == f
                flat = _outer(onehot[pick], x[pick]).reshape(int(pick.sum()), self.categories * d)
                self.xx[v][f] += (flat.T @ x[pick]).reshape(self.categories, d, d)
                self.rx[v][f] += (flat.T @ reward[pick]).reshape(self.categories, d)

    def fit(self, version: str, ridge: float) -> RewardModels:
        """Each fold's models (a category a fold never showed predicts 0, or 1/2 for the
        floors); the features' first is the bias."""
        xx, rx = self.xx[version], self.rx[version]
        q = ridge_theta(ridge_inverse(xx, ridge), rx)
        xx, rx = xx.copy(), rx.copy()
        xx[..., 0, 0] += 2 * PSEUDO_REWARDS
        rx[..., 0] += PSEUDO_REWARDS
        return RewardModels(q, ridge_theta(ridge_inverse(xx, ridge), rx))


@dataclass
class FeatureSums:
    """A group's sums that involve the features of one version (see the module)."""

    u: Vector  # (C, d) Σ G⊗x
    uu: Vector  # (C, d, C, d) Σ (G⊗x)(G⊗x)ᵀ
    ub: Vector  # (C, d) Σ (G⊗x)·w·r
    ur: Vector  # (C, d) Σ (G⊗x)·r
    m: Vector  # (C, d) Σ M⊗x, M_c = Σ_{j of c} min(π²/p, clip²·p): IPS's second moment
    h: Vector  # (C, d, d) Σ_c M_c·x·xᵀ
    mc: Vector  # (C, d) Σ D⊗x, D_c = Σ_{j of c} (min(π²/p, clip²·p) − 2π + p)
    hc: Vector  # (C, d, d) Σ_c D_c·x·xᵀ

    @classmethod
    def empty(cls, categories: int, d: int) -> FeatureSums:
        c = categories
        return cls(
            np.zeros((c, d)),
            np.zeros((c, d, c, d)),
            np.zeros((c, d)),
            np.zeros((c, d)),
            np.zeros((c, d)),
            np.zeros((c, d, d)),
            np.zeros((c, d)),
            np.zeros((c, d, d)),
        )

    def grow(self, categories: int) -> None:
        for name in ("u", "ub", "ur", "m", "mc", "h", "hc"):
            setattr(self, name, _grow(getattr(self, name), (0,), categories))
        self.uu = _grow(self.uu, (0, 2), categories)


@dataclass
class GroupSums:
    """Sums over one group of a policy's decisions: those one policy decided, in one fold."""

    n: int = 0
    w: float = 0.0  # Σ w (clipped weights)
    w2: float = 0.0  # Σ w²
    raw: float = 0.0  # Σ π(a)/p(a), unclipped
    cut: float = 0.0  # Σ (π(a)/p(a) − w): the weight the clip removed
    clipped: int = 0  # decisions whose weight was clipped
    max_weight: float = 0.0
    unseen: float = 0.0  # Σ the policy's probability on candidates logged with p = 0
    ratio: float = 0.0  # Σ Σ_j min(π²/p, clip²·p): E[w²], what the effective size expects
    wr: float = 0.0  # Σ w·r
    wr2: float = 0.0  # Σ (w·r)²
    w2r: float = 0.0  # Σ w²·r
    wrr: float = 0.0  # Σ w·r²
    r: float = 0.0  # Σ r
    r2: float = 0.0  # Σ r²
    features: dict[str, FeatureSums] = field(default_factory=dict)


@dataclass(frozen=True)
class _Chunk:
    """One chunk's decisions where a policy's probabilities are known, with the per-decision
    numbers its sums need."""

    pi: Vector  # (m, K) the policy's probabilities (a contrast's: π_A − π_B)
    p: Vector  # (m, K) the logging policy's
    codes: Ints  # (m, K) the candidates' categories
    shown: Ints  # (m,) index of the shown candidate
    r: Vector
    raw: Vector  # π(a)/p(a) (a contrast: π_A(a)/p(a) + π_B(a)/p(a), the weight to clip)
    w: Vector  # clipped (a contrast: w_A − w_B)
    cut: Vector  # what the clip removed of the weight
    reach: Vector  # (m, K) the probability the policy (or either side) puts on each candidate
    ratio: Vector  # (m, K) p·w(j)²: min(π²/p, clip²·p) (a contrast: p·(w_A(j) − w_B(j))²)
    xs: dict[str, Vector]  # version → (m, d)
    group: Ints  # (m,) decider code · FOLDS + fold


class PolicySums:
    """Everything a policy's estimates need from the log, by (decider, fold)."""

    def __init__(self, clip: float) -> None:
        self.clip = clip
        self.categories = 0
        self.versions = dict(VERSIONS)
        self.groups: dict[tuple[str, int], GroupSums] = {}

    @property
    def n(self) -> int:
        return sum(g.n for g in self.groups.values())

    def grow(self, categories: int) -> None:
        if categories > self.categories:
            self.categories = categories
            for group in self.groups.values():
                for sums in group.features.values():
                    sums.grow(categories)

    def drop(self, version: str) -> None:
        self.versions.pop(version, None)
        for group in self.groups.values():
            group.features.pop(version, None)

    def add(
        self,
        traffic: Traffic,
        probabilities: Vector,
        codes: Ints,
        folds: Ints,
        xs: dict[str, Vector],
        minus: Vector | None = None,
    ) -> None:
        """A chunk's decisions where `probabilities` (n, K) are known (rows without NaN); with
        `minus`, the contrast `probabilities` − `minus` on the rows where both are known."""
        known = ~np.isnan(probabilities).any(axis=1)
        if minus is not None:
            known &= ~np.isnan(minus).any(axis=1)
        rows = np.flatnonzero(known)
        if not len(rows):
            return
        pi, p = probabilities[rows], traffic.logging[rows]
        shown = traffic.chosen[rows]
        at = np.arange(len(rows))
        weights = self._weights(pi, p)  # (m, K) each candidate's clipped weight
        raw = pi[at, shown] / p[at, shown]
        cut = raw - weights[at, shown]
        reach = pi
        if minus is not None:
            pi_b = minus[rows]
            weights_b = self._weights(pi_b, p)
            raw_b = pi_b[at, shown] / p[at, shown]
            pi, reach = pi - pi_b, pi + pi_b
            raw, cut = raw + raw_b, cut + raw_b - weights_b[at, shown]
            weights = weights - weights_b
        w = weights[at, shown]
        deciders = np.array(traffic.decider, dtype=object)[rows]
        names = list(dict.fromkeys(deciders))
        decider_code = np.array([names.index(d) for d in deciders]) if len(names) > 1 else 0
        chunk = _Chunk(
            pi,
            p,
            codes[rows],
            shown,
            traffic.reward[rows],
            raw,
            w,
            np.maximum(cut, 0.0),
            reach,
            p * weights**2,
            {v: xs[v][rows] for v in self.versions},
            decider_code * FOLDS + folds[rows],
        )
        for code in np.unique(chunk.group):
            decider, fold = names[int(code) // FOLDS], int(code) % FOLDS
            group = self.groups.setdefault((decider, fold), self._empty_group())
            self._add_group(group, chunk, chunk.group == code)

    def _weights(self, pi: Vector, p: Vector) -> Vector:
        """(m, K) min(π/p, clip) of every candidate (0 where p = 0)."""
        ratio = np.divide(pi, p, out=np.zeros_like(pi), where=p > 0)
        clipped: Vector = np.minimum(ratio, self.clip)
        return clipped

    def _empty_group(self) -> GroupSums:
        features = {v: FeatureSums.empty(self.categories, d) for v, d in self.versions.items()}
        return GroupSums(features=features)

    def _add_group(self, group: GroupSums, chunk: _Chunk, pick: np.ndarray) -> None:
        pi, p, ratio = chunk.pi[pick], chunk.p[pick], chunk.ratio[pick]
        raw, w, r, cut = chunk.raw[pick], chunk.w[pick], chunk.r[pick], chunk.cut[pick]
        wr = w * r
        group.n += len(w)
        group.w += float(w.sum())
        group.w2 += float((w * w).sum())
        group.raw += float(raw.sum())
        group.cut += float(cut.sum())
        group.clipped += int((cut > 0).sum())
        group.max_weight = max(group.max_weight, float(raw.max()))
        group.unseen += float((chunk.reach[pick] * (p <= 0)).sum())
        group.ratio += float(ratio.sum())
        group.wr += float(wr.sum())
        group.wr2 += float((wr * wr).sum())
        group.w2r += float((w * wr).sum())
        group.wrr += float((wr * r).sum())
        group.r += float(r.sum())
        group.r2 += float((r * r).sum())
        codes = chunk.codes[pick]
        shown = codes[np.arange(len(w)), chunk.shown[pick]]
        g = _by_category(pi, codes, self.categories)
        g[np.arange(len(w)), shown] -= w
        m = _by_category(ratio, codes, self.categories)
        mc = _by_category(ratio - 2 * pi + p, codes, self.categories)
        for version, sums in group.features.items():
            x = chunk.xs[version][pick]
            shape, d = sums.u.shape, x.shape[1]
            flat = _outer(g, x).reshape(len(w), -1)  # row i: G_i ⊗ x_i, category-major
            sums.u += flat.sum(axis=0).reshape(shape)
            sums.uu += (flat.T @ flat).reshape(sums.uu.shape)
            sums.ub += (flat.T @ wr).reshape(shape)
            sums.ur += (flat.T @ r).reshape(shape)
            for coefficients, linear, square in ((m, sums.m, sums.h), (mc, sums.mc, sums.hc)):
                weighted = _outer(coefficients, x).reshape(len(w), -1)
                linear += weighted.sum(axis=0).reshape(shape)
                square += (weighted.T @ x).reshape(self.categories, d, d)
