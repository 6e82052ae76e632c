"""The levels, the estimate type and the JSON numbers both loops share (issue 33, item 1)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from tipbench.stats import (
    ALPHA,
    CONFIDENCE,
    STEP_VARIANCE,
    Estimate,
    json_number,
    json_numbers,
    mean_interval,
    resolution_variance,
)


def test_one_level_for_every_interval_and_test() -> None:
    assert (ALPHA, CONFIDENCE) == (0.05, 0.95)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_nan_and_infinities_become_null(value: float) -> None:
    """A strict JSON parser refuses NaN and Infinity: both are written as null."""
    assert json_number(value) is None
    assert json.dumps({"x": json_number(value)}, allow_nan=False) == '{"x": null}'


def test_finite_numbers_pass_as_python_numbers() -> None:
    assert json_number(np.float64(1.5)) == 1.5
    assert type(json_number(np.float64(1.5))) is float
    assert json_number(3) == 3
    assert type(json_number(3)) is int
    assert json_number(None) is None
    assert json_number(-0.25) == -0.25


def test_a_normal_estimate_is_value_plus_or_minus_z_standard_errors() -> None:
    """1.96 standard errors at 95% (scipy's normal quantile), 2.576 at 99%."""
    estimate = Estimate.normal(0.4, 0.05, n=120)
    z = scipy_stats.norm.ppf(0.975)
    assert (estimate.low, estimate.high) == (
        pytest.approx(0.4 - z * 0.05),
        pytest.approx(0.4 + z * 0.05),
    )
    assert (estimate.method, estimate.se, estimate.n, estimate.confidence) == (
        "normal",
        0.05,
        120,
        0.95,
    )
    wide = Estimate.normal(0.4, 0.05, confidence=0.99)
    assert wide.high - wide.value == pytest.approx(scipy_stats.norm.ppf(0.995) * 0.05)


def test_an_estimate_without_a_standard_error_has_no_interval() -> None:
    estimate = Estimate.normal(0.4, math.nan)
    assert not estimate.has_interval
    assert estimate.to_dict() == {
        "value": 0.4,
        "low": None,
        "high": None,
        "method": "normal",
        "se": None,
        "n": 0,
        "confidence": 0.95,
    }
    with pytest.raises(ValueError, match="confidence"):
        Estimate.normal(0.4, 0.1, confidence=1.0)


def test_a_leaderboard_interval_is_an_estimate_with_its_method() -> None:
    """Five values: too few for the exact test to reach 0.05, so no interval (and the JSON
    says so with nulls); eight: the exact sign-flip interval."""
    few = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (few.value, few.method, few.n, few.has_interval) == (3.0, "none", 5, False)
    assert json.dumps(few.to_dict(), allow_nan=False)
    eight = mean_interval([float(v) for v in range(1, 9)])
    assert (eight.method, eight.n, eight.has_interval) == ("sign-flip", 8, True)
    assert math.isnan(eight.se)


def test_the_floor_of_a_sum_of_integer_scores() -> None:
    """Sheppard: rounding to an integer leaves a variance of 1/12; three criteria add up 3/12."""
    assert resolution_variance() == STEP_VARIANCE == pytest.approx(1 / 12)
    assert resolution_variance(3) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="at least one"):
        resolution_variance(0)


def test_a_document_of_figures_goes_to_strict_json() -> None:
    """`json_numbers` (a promotion's evidence, nested dicts and lists) leaves no NaN or
    infinity for a strict parser to refuse."""
    document = {"margin": 0.005, "vs_live": {"low": -math.inf, "p": math.nan}, "seeds": (1, 2)}
    text = json.dumps(json_numbers(document), allow_nan=False)
    assert json.loads(text) == {
        "margin": 0.005,
        "vs_live": {"low": None, "p": None},
        "seeds": [1, 2],
    }


def test_an_estimate_prints_and_reads_back_the_same_in_both_loops() -> None:
    """One text for an estimate with its interval, and a simulation report written before
    issue 33 (`mean`, no method) still reads back."""
    estimate = Estimate.normal(0.412, 0.01, n=100)
    assert estimate.text() == "0.4120 [0.3924, 0.4316]"
    assert Estimate(0.0114, 0.0052, 0.0176, "bootstrap").text(signed=True) == (
        "+0.0114 [+0.0052, +0.0176]"
    )
    assert Estimate.from_dict(estimate.to_dict()) == estimate
    old = Estimate.from_dict({"mean": 0.5, "low": 0.4, "high": None, "n": 8})
    assert (old.value, old.low, old.n, old.method) == (0.5, 0.4, 8, "bootstrap")
    assert math.isnan(old.high)
