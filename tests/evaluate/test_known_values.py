"""Outside-style checks on hand-made logs whose true values are known by construction: heavy
importance weights, and a tip the logging policy never shows."""

from __future__ import annotations

import numpy as np
import pytest

from support.policy_logs import decision
from tipbench.evaluate import ESTIMATORS, evaluate, traffic_from_rows

MEANS = (0.2, 0.7)  # each tip's true mean reward (Bernoulli)
LOGGING = (0.97, 0.03)  # the logging policy shows t1 rarely...
TARGET = (0.1, 0.9)  # ... and the target would show it mostly: t1's weight is 30
TRUTH = float(np.dot(TARGET, MEANS))  # 0.65
REPETITIONS = 200


def heavy_log(seed: int, n: int = 2000) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    shown = rng.choice(2, size=n, p=LOGGING)
    rewards = rng.random(n) < np.take(MEANS, shown)
    return [
        decision(LOGGING, int(s), float(r), TARGET, f"d{i}")
        for i, (s, r) in enumerate(zip(shown, rewards, strict=True))
    ]


def test_heavy_weights_intervals_cover_the_known_value() -> None:
    """Weights of 30 on 3% of the decisions (effective sample about 70 of 2,000): each 95%
    interval (its variance at least what the reward model expects: the rare large weights
    make a sample's own too small) covers the true 0.65 in at least 90% of these 200 seeded
    logs (IPS 93.5%, SNIPS and DR 91%: these logs hold more extreme rare-tip means than
    most; over the next 1,000 seeds 95–96%, and `test_small_samples` asserts 93% on 600
    logs of each size); every estimator centres on it."""
    covered: dict[str, list[bool]] = {name: [] for name in ESTIMATORS}
    values: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    for seed in range(REPETITIONS):
        shadow = evaluate(traffic_from_rows(heavy_log(seed)), ["egreedy-v2"]).policy("egreedy-v2")
        assert shadow.status == "estimated", shadow.reason
        assert shadow.clipped == 0 and 30 <= shadow.ess < 100
        for name in ESTIMATORS:
            estimate = shadow.estimates[name]
            covered[name].append(estimate.low <= TRUTH <= estimate.high)
            values[name].append(estimate.value)
    rates = {name: float(np.mean(hits)) for name, hits in covered.items()}
    assert min(rates.values()) >= 0.90, rates
    for name in ESTIMATORS:
        assert np.mean(values[name]) == pytest.approx(TRUTH, abs=0.02), name


def test_probability_on_a_tip_the_logger_never_shows_is_no_overlap() -> None:
    """t2 is logged with probability 0 (never shown) and the target puts 0.3 on it: its
    reward is nowhere in the log, so no estimate is given (the truth, 0.3·μ(t2) + …, cannot
    be told from the log), rather than one that leaves t2 out."""
    rng = np.random.default_rng(0)
    logging, target = (0.5, 0.5, 0.0), (0.35, 0.35, 0.3)
    log = [
        decision(logging, int(s), float(rng.random() < 0.5), target, f"d{i}")
        for i, s in enumerate(rng.choice(2, size=500))
    ]
    shadow = evaluate(traffic_from_rows(log), ["egreedy-v2"]).policy("egreedy-v2")
    assert shadow.status == "no overlap"
    assert shadow.reason == "30.0% of its probability is on tips the logging policy never shows"
    assert shadow.estimates == {}


def test_weights_past_the_clip_leave_ips_and_snips_biased_and_dr_estimated() -> None:
    """A request of 100 candidates: ε-greedy's floor is ε/100 = 0.001, and a target that
    shows such a tip 70% of the time has weights of 700, cut to 100. IPS printed "estimated"
    at about a quarter of the truth (0.354 for 0.698 in the issue); now IPS and SNIPS are
    "biased: clipped" and DR, whose clipped term corrects only the reward model's residuals,
    holds the truth. Tips of a category share its mean (focus 0.3, break 0.9, …)."""
    rng = np.random.default_rng(3)
    k, n = 100, 5000
    logging = tuple([0.9 + 0.001] + [0.001] * (k - 1))
    target = tuple([0.3, 0.7] + [0.0] * (k - 2))
    means = [(0.3, 0.9, 0.5, 0.6)[i % 4] for i in range(k)]
    truth = 0.3 * 0.3 + 0.7 * 0.9
    shown = rng.choice(k, size=n, p=logging)
    log = [
        decision(logging, int(s), float(rng.random() < means[s]), target, f"c{i}")
        for i, s in enumerate(shown)
    ]
    report = evaluate(traffic_from_rows(log), ["egreedy-v2"])
    shadow = report.policy("egreedy-v2")
    assert shadow.status == "estimated" and shadow.max_weight == pytest.approx(700)
    assert shadow.clipped_weight > 0.5  # most of the weight was cut
    assert shadow.biased == ("ips", "snips") and set(shadow.estimates) == {"dr"}
    dr = shadow.estimates["dr"]
    assert dr.low <= truth <= dr.high, dr
    assert report.floor == pytest.approx(0.001)
