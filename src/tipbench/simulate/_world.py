"""The simulated world of one seed: users, their tip opportunities and every potential outcome.

Common random numbers: everything here depends on the seed and the population alone, never on
a policy. Every policy simulated with a seed sees the same users (persona, profile), the same
moments in the same order, the same candidate tips, and for each (opportunity, candidate) the
same potential outcome (event, dwell, reward), so whichever policy shows tip t at opportunity
k gets the same response, and policies are compared paired.

The hidden response model (the population file's `response` and `effects`): for a user of
persona p at a moment, a tip of category c is completed with probability

    σ(logit(complete[p, c]) + e_hour·cos(2π(h − preferred_hour[p])/24) + e_tips·tips_today
      + deadline[c]·urgency + evening[c]·[h ≥ 18] + weekend[c]·[Saturday or Sunday])

where urgency = 1 − the v1 `deadline` feature (1 for a deadline now, 0 for none or one a week
away), plus, in a sim A/B (`_ab.py`), the shift of the tip's own quality; it is dismissed
with probability (1 − that)·dismiss[p, c]/(1 − complete[p, c]), and otherwise viewed for an
exponentially distributed dwell of mean dwell_s[p, c]. The reward is
`tipbench.policies.rewards` of that event: the service's mapping.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tipbench.policies import (
    FEATURES_V1,
    FEATURES_V2,
    Event,
    FeatureVersion,
    Moment,
    Profile,
    Vector,
    features_v2,
    rewards,
)
from tipbench.suite import Catalogue, Population

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

# How much a user's profile varies around their persona's (standard deviations).
RATE_NOISE = 0.04
DWELL_NOISE = 0.2  # log scale
PREFERRED_HOUR_NOISE = 1.0  # hours
EVENING_HOUR = 18.0
# Dwell quantiles over which the expected reward of a view is averaged (the oracle's figure).
_VIEW_GRID = 512


def stream_seed(*parts: int | str) -> list[int]:
    """A stable integer seed list for numpy from ints and names (names hashed with SHA-256)."""
    seeds = []
    for part in parts:
        if isinstance(part, str):
            part = int.from_bytes(hashlib.sha256(part.encode()).digest()[:8], "big")
        seeds.append(int(part))
    return seeds


@dataclass(frozen=True)
class Users:
    """One seed's users: persona index and the profile their v2 features show."""

    persona: Ints  # (U,)
    profiles: tuple[Profile, ...]


@dataclass(frozen=True)
class World:
    """One seed's traffic: T opportunities in time order, K candidates each."""

    seed: int
    users: Users
    schedule: Schedule  # (T,) who each opportunity is for, and when
    x_v1: Vector  # (T, 7) the v1 features of each opportunity
    x_v2: Vector  # (T, 12)
    tips: Ints  # (T, K) candidate tips (indices into the catalogue's tips)
    categories: Ints  # (T, K) their categories (indices into the catalogue's categories)
    completed: Bools  # (T, K) the potential outcome of showing candidate j at opportunity k
    dismissed: Bools  # (T, K)
    dwell_s: Vector  # (T, K)
    reward: Vector  # (T, K)
    expected: Vector  # (T, K) the true expected reward (what the oracle knows)

    @property
    def steps(self) -> int:
        return len(self.schedule.user)

    @property
    def persona(self) -> Ints:
        """(T,) the persona of each opportunity's user."""
        return self.users.persona[self.schedule.user]

    def features(self, version: FeatureVersion) -> Vector:
        return self.x_v1 if version == "v1" else self.x_v2

    def event(self, k: int, j: int) -> Event:
        """The event of showing candidate j at opportunity k (its potential outcome)."""
        if self.completed[k, j]:
            return "completed"
        return "dismissed" if self.dismissed[k, j] else "viewed"


def make_users(population: Population, n_users: int, rng: np.random.Generator) -> Users:
    """Users drawn by persona share, each with a profile near the persona's."""
    shares = np.array([p.share for p in population.personas])
    persona = rng.choice(len(shares), size=n_users, p=shares / shares.sum())
    profiles = []
    for index in persona:
        base = population.personas[index].profile
        completion = float(np.clip(base.completion_rate + rng.normal(0, RATE_NOISE), 0.01, 0.95))
        dismiss = float(np.clip(base.dismiss_rate + rng.normal(0, RATE_NOISE), 0.0, 1 - completion))
        profiles.append(
            Profile(
                completion_rate=completion,
                dismiss_rate=dismiss,
                mean_dwell_s=float(base.mean_dwell_s * math.exp(rng.normal(0, DWELL_NOISE))),
                preferred_hour=float(
                    (base.preferred_hour + rng.normal(0, PREFERRED_HOUR_NOISE)) % 24
                ),
                tips_seen=int(rng.poisson(base.tips_seen)),
            )
        )
    return Users(persona=persona.astype(np.int64), profiles=tuple(profiles))


@dataclass(frozen=True)
class Schedule:
    """Every opportunity of a world as columns, in time order (day, local hour, user)."""

    user: Ints
    day: Ints
    local_hour: Vector
    open_tasks: Ints
    minutes_to_deadline: Vector  # NaN: no deadline
    tips_today: Ints

    def moment(self, k: int) -> Moment:
        deadline = float(self.minutes_to_deadline[k])
        return Moment(
            local_hour=float(self.local_hour[k]),
            weekday=int(self.day[k] % 7),
            open_tasks=int(self.open_tasks[k]),
            minutes_to_deadline=None if math.isnan(deadline) else deadline,
            tips_today=int(self.tips_today[k]),
        )


def make_schedule(
    population: Population, users: Users, days: int, rng: np.random.Generator
) -> Schedule:
    """Every user's opportunities: `opportunities_per_day` a day inside the persona's active
    hours, with the day's open tasks and each opportunity's nearest deadline."""
    personas = population.personas
    n_users, per_day = len(users.persona), population.opportunities_per_day
    p = users.persona

    def column(values: list[float]) -> Vector:
        return np.array(values, dtype=np.float64)[p][None, :, None]

    shape = (days, n_users, per_day)
    start, end = (
        column([q.active_hours[0] for q in personas]),
        column([q.active_hours[1] for q in personas]),
    )
    hours = np.sort(start + (end - start) * rng.random(shape), axis=2)
    hours = np.minimum(hours, 24 - 1e-6)
    low, high = (
        column([q.open_tasks[0] for q in personas]),
        column([q.open_tasks[1] for q in personas]),
    )
    open_tasks = np.floor(low + (high - low + 1) * rng.random((days, n_users, 1)))
    open_tasks = np.broadcast_to(np.minimum(open_tasks, high), shape)
    d_low = column([q.deadline_hours[0] for q in personas])
    d_high = column([q.deadline_hours[1] for q in personas])
    deadline = (d_low + (d_high - d_low) * rng.random(shape)) * 60
    none = rng.random(shape) < column([q.no_deadline for q in personas])
    deadline = np.where(none, np.nan, deadline)
    day = np.broadcast_to(np.arange(days)[:, None, None], shape)
    user = np.broadcast_to(np.arange(n_users)[None, :, None], shape)
    served = np.broadcast_to(np.arange(per_day)[None, None, :], shape)
    order = np.lexsort((user.ravel(), hours.ravel(), day.ravel()))
    return Schedule(
        user=user.ravel()[order].astype(np.int64),
        day=day.ravel()[order].astype(np.int64),
        local_hour=hours.ravel()[order],
        open_tasks=open_tasks.ravel()[order].astype(np.int64),
        minutes_to_deadline=deadline.ravel()[order],
        tips_today=served.ravel()[order].astype(np.int64),
    )


def completion_logits(
    population: Population, persona: Ints, schedule: Schedule, x_v1: Vector
) -> Vector:
    """(T, C) the log-odds of completing a tip of each category at each opportunity."""
    base = np.array([[r.complete for r in p.response] for p in population.personas])
    base = np.clip(base, 1e-6, 1 - 1e-6)
    logits = np.log(base / (1 - base))[persona]
    effects = population.effects
    hour = schedule.local_hour
    preferred = np.array([p.profile.preferred_hour for p in population.personas])[persona]
    alignment = np.cos(2 * np.pi * (hour - preferred) / 24)
    tips_today = schedule.tips_today.astype(np.float64)
    urgency = 1.0 - x_v1[:, 5]
    evening = (hour >= EVENING_HOUR).astype(np.float64)
    weekend = x_v1[:, 3]
    shift = effects.preferred_hour * alignment + effects.tips_today * tips_today
    logits = logits + shift[:, None]
    logits = logits + urgency[:, None] * np.array(effects.deadline)
    logits = logits + evening[:, None] * np.array(effects.evening)
    result: Vector = logits + weekend[:, None] * np.array(effects.weekend)
    return result


def view_rewards(population: Population) -> Vector:
    """(P, C) the expected reward of a view: the reward mapping averaged over the dwell's
    exponential distribution (by quantiles)."""
    quantiles = -np.log(1 - (np.arange(_VIEW_GRID) + 0.5) / _VIEW_GRID)
    dwell = np.array([[r.dwell_s for r in p.response] for p in population.personas])
    grid = dwell[..., None] * quantiles
    none = np.zeros(grid.shape, dtype=np.bool_)
    result: Vector = rewards(none, none, grid).mean(axis=-1)
    return result


Shift = Callable[[int, tuple[int, int]], Vector]
"""(seed, (T, K)) → the log-odds of completing each candidate is shifted by (its quality)."""


def make_world(
    population: Population,
    catalogue: Catalogue,
    seed: int,
    n_users: int,
    days: int,
    shift: Shift | None = None,
) -> World:
    """The traffic of one seed (the same for every policy); `shift` moves each candidate's
    log-odds of being completed (a sim A/B's tip quality), the outcomes' random numbers
    staying the same (worlds of different shifts are paired)."""
    users_rng, schedule_rng, candidates_rng, outcomes_rng = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence(stream_seed(seed, "world")).spawn(4)
    )
    users = make_users(population, n_users, users_rng)
    schedule = make_schedule(population, users, days, schedule_rng)
    n = len(schedule.user)
    x_v2 = np.empty((n, len(FEATURES_V2)))
    for k, user in enumerate(schedule.user):  # the service's feature code, row by row
        x_v2[k] = features_v2(schedule.moment(k), users.profiles[user])
    x_v1 = x_v2[:, : len(FEATURES_V1)].copy()  # v2 starts with v1
    tip_category = np.array(
        [population.categories.index(tip.category) for tip in catalogue.tips], dtype=np.int64
    )
    order = np.argsort(candidates_rng.random((n, len(tip_category))), axis=1)
    tips = order[:, : population.candidates].astype(np.int64)
    categories = tip_category[tips]
    persona = users.persona[schedule.user]
    rows = np.arange(n)[:, None]
    p_complete = 1 / (1 + np.exp(-completion_logits(population, persona, schedule, x_v1)))
    base = np.array([[(r.complete, r.dismiss) for r in p.response] for p in population.personas])
    dismiss_share = base[..., 1] / np.maximum(1 - base[..., 0], 1e-9)
    p_dismiss = (1 - p_complete) * np.clip(dismiss_share, 0, 1)[persona]
    mean_dwell = np.array([[r.dwell_s for r in p.response] for p in population.personas])
    pc, pd = p_complete[rows, categories], p_dismiss[rows, categories]
    if shift is not None:
        logits = np.log(pc / (1 - pc)) + shift(seed, tips.shape)
        shifted = 1 / (1 + np.exp(-logits))
        pd = (1 - shifted) * np.divide(pd, 1 - pc, out=np.zeros_like(pd), where=pc < 1)
        pc = shifted
    draw = outcomes_rng.random(tips.shape)
    completed = draw < pc
    dismissed = ~completed & (draw < pc + pd)
    dwell = mean_dwell[persona][rows, categories] * outcomes_rng.exponential(size=tips.shape)
    done = np.ones(tips.shape, dtype=np.bool_)
    never = np.zeros(tips.shape, dtype=np.bool_)
    expected = (
        pc * rewards(done, never, dwell)
        + pd * rewards(never, done, dwell)
        + (1 - pc - pd) * view_rewards(population)[persona][rows, categories]
    )
    return World(
        seed=seed,
        users=users,
        schedule=schedule,
        x_v1=x_v1,
        x_v2=x_v2,
        tips=tips,
        categories=categories,
        completed=completed,
        dismissed=dismissed,
        dwell_s=dwell,
        reward=rewards(completed, dismissed, dwell),
        expected=expected,
    )
