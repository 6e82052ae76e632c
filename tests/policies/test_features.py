"""The v1 and v2 features, checked number by number against the worked examples of
`tipbench.policies._features`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tipbench.policies import (
    FEATURES_V1,
    FEATURES_V2,
    Moment,
    Profile,
    ProfileStats,
    features,
    features_v1,
    features_v2,
)

TUESDAY_8 = Moment(local_hour=8, weekday=1, open_tasks=3, minutes_to_deadline=600, tips_today=0)
SUNDAY_2230 = Moment(
    local_hour=22.5, weekday=6, open_tasks=0, minutes_to_deadline=None, tips_today=2
)


def test_names_and_sizes() -> None:
    assert len(FEATURES_V1) == 7 and len(FEATURES_V2) == 12
    assert FEATURES_V2[:7] == FEATURES_V1


def test_worked_example_1() -> None:
    assert features_v1(TUESDAY_8) == pytest.approx(
        [1, 0.866025, -0.5, 0, 1.386294, 0.694111, 0], abs=1e-6
    )


def test_worked_example_2() -> None:
    assert features_v1(SUNDAY_2230) == pytest.approx(
        [1, -0.382683, 0.923880, 1, 0, 1, 1.098612], abs=1e-6
    )


def test_worked_example_3_new_user_priors() -> None:
    new = Profile.from_stats(ProfileStats())
    assert (new.completion_rate, new.dismiss_rate, new.mean_dwell_s) == (0.25, 0.25, 30.0)
    assert new.preferred_hour is None and new.tips_seen == 0
    x = features_v2(TUESDAY_8, new)
    assert x[7:] == pytest.approx([0.25, 0.25, 0.05, 0, 0], abs=1e-12)
    assert x[:7] == pytest.approx(features_v1(TUESDAY_8))


def test_worked_example_4_user_history() -> None:
    stats = ProfileStats()
    for hour in (7, 8, 8, 9, 8):
        stats = stats.updated("completed", None, hour)
    stats = stats.updated("dismissed", 40, 12).updated("dismissed", 900, 12)
    stats = stats.updated("viewed", 20, 15).updated("viewed", 0, 15)
    profile = Profile.from_stats(stats)
    assert profile.preferred_hour == pytest.approx(8)
    assert features_v2(TUESDAY_8, profile)[7:] == pytest.approx(
        [0.5, 0.227273, 0.2, 1, 2.302585], abs=1e-6
    )


def test_edges_give_finite_bounded_features() -> None:
    overdue = Moment(local_hour=0, weekday=5, open_tasks=0, minutes_to_deadline=-300, tips_today=0)
    far = Moment(
        local_hour=23.99, weekday=0, open_tasks=10**5, minutes_to_deadline=10**7, tips_today=0
    )
    assert features_v1(overdue)[5] == 0 and features_v1(far)[5] == 1
    assert features_v1(overdue)[3] == 1 and features_v1(far)[3] == 0
    # opposite completion hours cancel: no preferred hour, no alignment, never NaN
    stats = ProfileStats().updated("completed", None, 6).updated("completed", None, 18)
    profile = Profile.from_stats(stats)
    assert profile.preferred_hour is None
    for moment in (overdue, far):
        x = features("v2", moment, profile)
        assert np.isfinite(x).all() and x[10] == 0


def test_alignment_is_the_cosine_to_the_preferred_hour() -> None:
    profile = Profile(0.5, 0.1, 60, preferred_hour=20, tips_seen=3)
    at = Moment(local_hour=14, weekday=2, open_tasks=1, minutes_to_deadline=None, tips_today=1)
    assert features_v2(at, profile)[10] == pytest.approx(math.cos(2 * math.pi * -6 / 24))
    assert features_v2(at, profile)[10] == pytest.approx(0, abs=1e-12)  # six hours apart
