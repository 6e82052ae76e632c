"""A contrast of two targets (what the online tier compares two sources of tips with): their
difference paired by decision, its DR and IPS exactly the two targets' own differences on the
same decisions, its interval covering the known difference in seeded logs, and one target on
both sides refused."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from support.policy_logs import decision
from tipbench._errors import ConfigError
from tipbench.evaluate import evaluate, traffic_chunks, traffic_from_rows

MEANS = (0.2, 0.7, 0.45)  # each tip's true mean reward (Bernoulli)
LOGGING = (0.5, 0.3, 0.2)
TARGET_A = (0.1, 0.8, 0.1)  # egreedy-v2 (shadow)
TARGET_B = (0.6, 0.2, 0.2)  # linucb (shadow)
TRUTH = float(np.dot(np.subtract(TARGET_A, TARGET_B), MEANS))  # +0.3
CONTRAST = {"v2 − linucb": ("egreedy-v2", "linucb")}


def two_shadow_log(seed: int, n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    shown = rng.choice(3, size=n, p=LOGGING)
    rewards = rng.random(n) < np.take(MEANS, shown)
    rows = []
    for i, (s, r) in enumerate(zip(shown, rewards, strict=True)):
        row = decision(LOGGING, int(s), float(r), TARGET_A, f"s{seed}-{i}")
        other = copy.deepcopy(row["shadows"][0])
        other["policy"] = "linucb"
        for candidate, p in zip(other["candidates"], TARGET_B, strict=True):
            candidate["probability"] = p
        row["shadows"].append(other)
        rows.append(row)
    return rows


def test_a_contrast_is_the_two_targets_difference_on_the_same_decisions() -> None:
    rows = two_shadow_log(0, 800)
    report = evaluate(traffic_chunks(rows, size=300), contrasts=CONTRAST)
    a, b = report.policy("egreedy-v2"), report.policy("linucb")
    contrast = report.contrast("v2 − linucb")
    assert contrast.status == "estimated" and contrast.decisions == 800
    for name in ("ips", "dr"):
        difference = a.estimates[name].value - b.estimates[name].value
        assert contrast.estimates[name].value == pytest.approx(difference, abs=1e-12)
    assert "snips" not in contrast.estimates  # a ratio of one target's weights
    assert report.to_dict()["contrasts"][0]["policy"] == "v2 − linucb"


def test_contrast_intervals_cover_the_known_difference() -> None:
    """300 seeded logs of 600 decisions: the DR and IPS intervals of A − B cover +0.3 in at
    least 93% of them."""
    covered: dict[str, list[bool]] = {"ips": [], "dr": []}
    for seed in range(300):
        traffic = traffic_from_rows(two_shadow_log(seed, 600))
        contrast = evaluate(traffic, contrasts=CONTRAST).contrast("v2 − linucb")
        for name, hits in covered.items():
            estimate = contrast.estimates[name]
            hits.append(estimate.low <= TRUTH <= estimate.high)
    rates = {name: float(np.mean(hits)) for name, hits in covered.items()}
    assert min(rates.values()) >= 0.93, rates


def test_thin_traffic_and_one_target_on_both_sides() -> None:
    few = evaluate(traffic_from_rows(two_shadow_log(1, 40)), contrasts=CONTRAST)
    assert few.contrast("v2 − linucb").status == "too little data"
    with pytest.raises(ConfigError, match="on both sides"):
        evaluate(traffic_from_rows(two_shadow_log(1, 40)), contrasts={"x": ("linucb", "linucb")})
