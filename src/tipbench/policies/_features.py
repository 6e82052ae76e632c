"""The context features policies learn on: v1 (7) and v2 (12). The one home of their definition.

Every candidate of a request shares the request's feature vector; the candidate's category
picks which of the policy's per-category models scores it (disjoint arms).

| #  | name             | version | value                                                        |
|----|------------------|---------|--------------------------------------------------------------|
| 0  | `bias`           | v1      | 1                                                            |
| 1  | `hour_sin`       | v1      | sin(2π·h/24), h = local hour (0 ≤ h < 24, minutes as fraction)|
| 2  | `hour_cos`       | v1      | cos(2π·h/24)                                                 |
| 3  | `weekend`        | v1      | 1 if weekday is 5 (Saturday) or 6 (Sunday), Monday = 0; else 0|
| 4  | `open_tasks`     | v1      | log(1 + open tasks)                                          |
| 5  | `deadline`       | v1      | log(1 + m)/log(1 + 10080), m = minutes to the nearest deadline|
|    |                  |         | clipped to [0, 10080] (one week); no deadline → 1            |
| 6  | `tips_today`     | v1      | log(1 + tips already served today)                           |
| 7  | `completion_rate`| v2      | (completed + 2·0.25)/(responses + 2)                         |
| 8  | `dismiss_rate`   | v2      | (dismissed + 2·0.25)/(responses + 2)                         |
| 9  | `dwell`          | v2      | mean dwell/600, each dwell clipped to 600 s, mean with a     |
|    |                  |         | prior of 2 dwells of 30 s: (Σdwell + 60)/(n_dwell + 2)/600   |
| 10 | `hour_alignment` | v2      | cos(2π·(h − preferred hour)/24); 0 while there is no         |
|    |                  |         | preferred hour (no completion yet)                           |
| 11 | `tip_volume`     | v2      | log(1 + tips the user has responded to)                      |

The rates start from a prior worth two responses (`PRIOR_RESPONSES`), so a new user has
completion and dismiss rates of 0.25, a mean dwell of 30 s, no preferred hour and no volume:
no division by zero and no NaN. The preferred hour is the circular mean of the local hours at
which the user completed tips.

Worked example 1 (v1): 08:00 on a Tuesday (weekday 1), 3 open tasks, the nearest deadline in
600 minutes, no tip yet today:

    bias 1, hour_sin sin(2π·8/24) = 0.866025, hour_cos cos(2π·8/24) = −0.5, weekend 0,
    open_tasks log(4) = 1.386294, deadline log(601)/log(10081) = 0.694111, tips_today 0

Worked example 2 (v1): 22:30 on a Sunday, no open task, no deadline, 2 tips today:

    1, sin(2π·22.5/24) = −0.382683, cos(2π·22.5/24) = 0.923880, 1, 0, 1, log(3) = 1.098612

Worked example 3 (v2): example 1's moment for a new user appends

    completion_rate 0.25, dismiss_rate 0.25, dwell 30/600 = 0.05, hour_alignment 0, tip_volume 0

Worked example 4 (v2): example 1's moment for a user with 9 responses: 5 completions (at
07:00, 08:00, 08:00, 09:00 and 08:00: preferred hour 8), 2 dismissals with dwells of 40 and
900 s (clipped to 600), 2 views with dwells of 20 and 0 s, appends

    completion_rate (5 + 0.5)/11 = 0.5, dismiss_rate (2 + 0.5)/11 = 0.227273,
    dwell (660 + 60)/(4 + 2)/600 = 0.2, hour_alignment cos(0) = 1, tip_volume log(10) = 2.302585
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

FeatureVersion = Literal["v1", "v2"]
FEATURES_V1 = (
    "bias",
    "hour_sin",
    "hour_cos",
    "weekend",
    "open_tasks",
    "deadline",
    "tips_today",
)
FEATURES_V2 = (
    *FEATURES_V1,
    "completion_rate",
    "dismiss_rate",
    "dwell",
    "hour_alignment",
    "tip_volume",
)
FEATURE_NAMES: dict[FeatureVersion, tuple[str, ...]] = {"v1": FEATURES_V1, "v2": FEATURES_V2}

DEADLINE_HORIZON_MIN = 7 * 24 * 60  # a deadline a week away or more counts as "far"
DWELL_CAP_S = 600.0  # 10 minutes: longer dwells are a tab left open, not attention
PRIOR_RESPONSES = 2.0
PRIOR_COMPLETION_RATE = 0.25
PRIOR_DISMISS_RATE = 0.25
PRIOR_DWELL_S = 30.0

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Moment:
    """The request's context: when it is for the user and what is on their plate."""

    local_hour: float  # 0 <= h < 24; 8.5 is 08:30
    weekday: int  # Monday = 0 ... Sunday = 6
    open_tasks: int
    minutes_to_deadline: float | None  # None: no deadline; negative: overdue (clipped to 0)
    tips_today: int


@dataclass(frozen=True)
class ProfileStats:
    """A user's sufficient statistics, updated with each reward; what the v2 features need."""

    responses: int = 0
    completed: int = 0
    dismissed: int = 0
    dwell_n: int = 0
    dwell_sum_s: float = 0.0  # each dwell clipped to DWELL_CAP_S
    completed_hour_sin: float = 0.0  # sums over completions: the preferred hour's direction
    completed_hour_cos: float = 0.0

    def updated(self, event: str, dwell_s: float | None, local_hour: float) -> ProfileStats:
        """The statistics after one more response (`completed`, `dismissed` or `viewed`)."""
        angle = _hour_angle(local_hour)
        done = event == "completed"
        return replace(
            self,
            responses=self.responses + 1,
            completed=self.completed + done,
            dismissed=self.dismissed + (event == "dismissed"),
            dwell_n=self.dwell_n + (dwell_s is not None),
            dwell_sum_s=self.dwell_sum_s + (min(dwell_s, DWELL_CAP_S) if dwell_s else 0.0),
            completed_hour_sin=self.completed_hour_sin + (math.sin(angle) if done else 0.0),
            completed_hour_cos=self.completed_hour_cos + (math.cos(angle) if done else 0.0),
        )


@dataclass(frozen=True)
class Profile:
    """The profile the v2 features read: from `ProfileStats` with priors, or given directly."""

    completion_rate: float
    dismiss_rate: float
    mean_dwell_s: float
    preferred_hour: float | None
    tips_seen: int

    @classmethod
    def from_stats(cls, stats: ProfileStats) -> Profile:
        n = stats.responses + PRIOR_RESPONSES
        resultant = math.hypot(stats.completed_hour_sin, stats.completed_hour_cos)
        preferred = None
        if stats.completed and resultant > 1e-9:  # opposite hours cancel: no preference
            angle = math.atan2(stats.completed_hour_sin, stats.completed_hour_cos)
            preferred = (angle / (2 * math.pi) * 24) % 24
        return cls(
            completion_rate=(stats.completed + PRIOR_RESPONSES * PRIOR_COMPLETION_RATE) / n,
            dismiss_rate=(stats.dismissed + PRIOR_RESPONSES * PRIOR_DISMISS_RATE) / n,
            mean_dwell_s=(stats.dwell_sum_s + PRIOR_RESPONSES * PRIOR_DWELL_S)
            / (stats.dwell_n + PRIOR_RESPONSES),
            preferred_hour=preferred,
            tips_seen=stats.responses,
        )


def _hour_angle(hour: float) -> float:
    return 2 * math.pi * hour / 24


def features_v1(moment: Moment) -> Vector:
    """The 7 v1 features of a moment (see the module's table)."""
    angle = _hour_angle(moment.local_hour)
    if moment.minutes_to_deadline is None:
        deadline = 1.0
    else:
        minutes = min(max(moment.minutes_to_deadline, 0.0), DEADLINE_HORIZON_MIN)
        deadline = math.log1p(minutes) / math.log1p(DEADLINE_HORIZON_MIN)
    return np.array(
        [
            1.0,
            math.sin(angle),
            math.cos(angle),
            1.0 if moment.weekday >= 5 else 0.0,
            math.log1p(moment.open_tasks),
            deadline,
            math.log1p(moment.tips_today),
        ]
    )


def features_v2(moment: Moment, profile: Profile) -> Vector:
    """The 12 v2 features: v1's, then the user's profile (see the module's table)."""
    alignment = 0.0
    if profile.preferred_hour is not None:
        alignment = math.cos(_hour_angle(moment.local_hour - profile.preferred_hour))
    extra = [
        profile.completion_rate,
        profile.dismiss_rate,
        min(profile.mean_dwell_s, DWELL_CAP_S) / DWELL_CAP_S,
        alignment,
        math.log1p(profile.tips_seen),
    ]
    return np.concatenate([features_v1(moment), np.array(extra)])


def features(version: FeatureVersion, moment: Moment, profile: Profile) -> Vector:
    """The feature vector of `version` for a moment and a profile."""
    return features_v1(moment) if version == "v1" else features_v2(moment, profile)
