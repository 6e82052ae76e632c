"""Off-policy estimates: exact figures on a hand-made log, and what is refused."""

from __future__ import annotations

import math

import pytest

from support.policy_logs import HAND_MADE, row
from tipbench.evaluate import BIASED_CLIP_SHARE, evaluate, render_evaluation, traffic_from_rows

Z = 1.959964


def test_exact_figures_on_a_hand_made_log() -> None:
    traffic = traffic_from_rows(HAND_MADE)
    assert (traffic.decisions, traffic.n) == (5, 4)
    report = evaluate(traffic, min_decisions=1, min_ess=0)
    assert report.live == "egreedy-v1"
    observed = report.observed_value("egreedy-v1")
    assert observed is not None and observed.value.value == pytest.approx(2.5 / 4)
    shadow = report.policy("egreedy-v2")
    assert (shadow.status, shadow.source, shadow.decisions) == ("estimated", "logged", 4)
    weights = [1.6, 0.4, 8.0, 2 / 9]
    assert shadow.ess == pytest.approx(sum(weights) ** 2 / sum(w * w for w in weights))
    assert shadow.clipped == 0
    ips, snips, dr = (shadow.estimates[name] for name in ("ips", "snips", "dr"))
    # The reward model's folds (by decision id): rows 0-1 and rows 2-3. Each category's ridge
    # on the bias alone predicts Σr/(n + 1) from the other fold: rows 0-1 get q(focus) =
    # 0.5/2, q(break) = 1/2 (from rows 2-3), rows 2-3 get q(focus) = 1/2, q(break) = 0/2.
    # The variance floors' model adds 2 rewards of 1 and 2 of 0: (Σr + 2)/(n + 4 + 1), so
    # rows 0-1 get q̃ = (2.5/6, 3/6), rows 2-3 q̃ = (3/6, 2/6).
    # Each candidate's expected squared weight v = π²/p: rows 0-1 (1.28, 0.08), rows 2-3
    # (2/45, 6.4).
    sum_v = 2 * 1.36 + 2 * (2 / 45 + 6.4)
    sum_vq = 2 * (1.28 * 2.5 / 6 + 0.08 * 0.5) + 2 * (2 / 45 * 0.5 + 6.4 * 2 / 6)
    sum_vqq = 2 * (1.28 * (2.5 / 6) * (3.5 / 6) + 0.08 / 4) + 2 * (2 / 45 / 4 + 6.4 * 2 / 9)
    # IPS: (1.6·1 + 0.4·0 + 8·1 + 2/9·0.5)/4; its sample sd beats the model's second moment
    assert ips.value == pytest.approx(9.711111 / 4, abs=1e-6)
    assert sum_vq / 4 - ips.value**2 < 14.331975 / 3
    assert ips.se == pytest.approx(math.sqrt(14.331975 / 4), abs=1e-5)
    assert ips.low == pytest.approx(ips.value - Z * ips.se)
    # SNIPS: Σw·r/Σw; the delta method's se √Σ(w(r − V))²/Σw = √0.3208/(92/9) is far below
    # what the reward model expects, (1/n)·Σ v·(q̃·(1 − 2V) + V²) over n: that one is taken
    assert snips.value == pytest.approx(0.95, abs=1e-9)
    expected = ((1 - 2 * 0.95) * sum_vq + 0.95**2 * sum_v) / 4
    assert math.sqrt(0.3208) / (92 / 9) < math.sqrt(expected / 4)
    assert snips.se == pytest.approx(math.sqrt(expected / 4), abs=1e-9)
    # DR terms: 0.3 + 1.6·0.75, 0.3 + 0.4·(−0.5), 0.1 + 8·1, 0.1 + 2/9·0 = 1.5, 0.1, 8.1, 0.1;
    # their sample variance beats the model's (1/n)·Σ v·q̃·(1 − q̃)
    assert dr.value == pytest.approx(9.8 / 4)
    assert (sum_vq - sum_vqq) / 4 < 43.87 / 3
    assert dr.se == pytest.approx(math.sqrt(43.87 / 3 / 4), abs=1e-6)
    comparison = report.comparison("egreedy-v2")
    assert comparison is not None and comparison.decisions == 4
    assert comparison.difference is not None
    assert comparison.difference.value == pytest.approx((9.8 - 2.5) / 4)


def test_weights_clipped_beyond_the_stated_share_bias_ips_and_snips() -> None:
    """Clipped at 2, the weight 8 loses 6 of the 92/9 the four weights hold (59%): IPS and
    SNIPS are "biased: clipped", not estimated; DR keeps its estimate (its clipped term
    corrects only the reward model's residual)."""
    report = evaluate(traffic_from_rows(HAND_MADE), clip=2.0, min_decisions=1, min_ess=0)
    shadow = report.policy("egreedy-v2")
    assert shadow.clipped == pytest.approx(0.25)  # w = 8 of the four
    assert shadow.clipped_weight == pytest.approx(6 / (92 / 9))
    assert shadow.clipped_weight > BIASED_CLIP_SHARE
    assert shadow.max_weight == pytest.approx(8.0)
    assert shadow.status == "estimated" and set(shadow.estimates) == {"dr"}
    statuses = shadow.to_dict()["statuses"]
    assert statuses == {"ips": "biased: clipped", "snips": "biased: clipped", "dr": "estimated"}
    assert report.clip == 2.0 and report.floor == pytest.approx(0.1)
    unclipped = evaluate(traffic_from_rows(HAND_MADE), min_decisions=1, min_ess=0)
    assert unclipped.policy("egreedy-v2").biased == ()


def test_too_little_data_is_said_not_estimated() -> None:
    shadow = evaluate(traffic_from_rows(HAND_MADE)).policy("egreedy-v2")
    assert shadow.status == "too little data"
    assert shadow.reason == "4 rewarded decisions with its probabilities; 100 needed"
    assert shadow.estimates == {}


def test_no_overlap_is_said_not_estimated() -> None:
    deterministic = [row((1.0, 0.0), 0, 1.0, (0.5, 0.5)) for _ in range(200)]
    shadow = evaluate(traffic_from_rows(deterministic)).policy("egreedy-v2")
    assert shadow.status == "no overlap"
    assert "50.0% of its probability is on tips the logging policy never shows" in shadow.reason
    assert shadow.estimates == {}
    rare = [row((0.99, 0.01), 0, 1.0, (0.0, 1.0)) for _ in range(150)]
    rare += [row((0.99, 0.01), 1, 1.0, (0.0, 1.0))]
    weak = evaluate(traffic_from_rows(rare)).policy("egreedy-v2")
    assert weak.status == "too little data" and "effective sample size 1.0" in weak.reason


def test_the_report_states_the_clip_the_floor_and_what_the_clip_biased() -> None:
    report = evaluate(traffic_from_rows(HAND_MADE), clip=2.0, min_decisions=1, min_ess=0)
    lines = render_evaluation(report)
    assert lines[1] == (
        "importance weights π/p clipped at 2; the smallest probability logged (the logging "
        "floor) is 0.1: weights up to 10"
    )
    shadow = next(line for line in lines if line.startswith("  egreedy-v2"))
    assert shadow.count("biased: clipped") == 2  # IPS and SNIPS; DR has its interval
    assert f"{report.policy('egreedy-v2').estimates['dr'].text()}" in shadow
    assert any(line.startswith("  (biased: clipped: the clip cut more than 0.1%") for line in lines)


def test_one_decision_has_no_interval_and_says_so() -> None:
    """A policy observed on one decision printed `1.0000 [nan, nan]`."""
    lines = render_evaluation(evaluate(traffic_from_rows(HAND_MADE[:1])))
    observed = next(line for line in lines if line.startswith("  egreedy-v1"))
    assert "1.0000 (1 decision: no interval)" in observed and "nan" not in observed
