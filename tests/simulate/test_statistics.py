"""Honest statistics: the simulator finds a real difference at its default size, and two
copies of one policy are declared different no more often than the test's level says."""

from __future__ import annotations

import dataclasses
import math

from tipbench.policies import PolicyConfig, policy_spec
from tipbench.simulate._play import Contender
from tipbench.simulate._report import versus
from tipbench.simulate._simulation import (
    DEFAULT_DAYS,
    DEFAULT_SEEDS,
    DEFAULT_USERS,
    SimulationConfig,
    load_study,
    simulate,
    simulate_seeds,
)

ALPHA = 0.05


def test_v2_beats_v1_at_the_default_size_where_profiles_matter() -> None:
    config = SimulationConfig(policies=("egreedy-v1", "egreedy-v2"))
    assert (config.seeds, config.days, config.users) == (DEFAULT_SEEDS, DEFAULT_DAYS, DEFAULT_USERS)
    report = simulate(config).report
    v2 = report.policy("egreedy-v2")
    assert v2.vs_live is not None
    assert v2.vs_live.difference.value > 0
    assert v2.vs_live.p_value < ALPHA
    assert v2.vs_live.difference.low > 0
    # the gain is the profile's: per persona, v2 is ahead for most personas
    v1 = report.policy("egreedy-v1")
    ahead = [
        p
        for p in v2.per_persona
        if v2.per_persona[p]["reward"].value > v1.per_persona[p]["reward"].value
    ]
    assert len(ahead) >= 4
    # both learn: the last day beats the first
    assert v2.per_day[-1].value > v2.per_day[0].value


def test_two_copies_of_one_policy_are_rarely_declared_different() -> None:
    """100 repetitions of a study at the default number of seeds, small worlds: the same
    policy with two policy seeds (its own draws differ, the worlds are shared). The sign-flip
    test's level is 5%: the share of rejections must stay within binomial error of it."""
    repetitions, seeds = 100, DEFAULT_SEEDS
    study = load_study(SimulationConfig(policies=("egreedy-v2",), seeds=seeds, days=3, users=8))
    spec = policy_spec("egreedy-v2")
    copies = (
        Contender("a", spec, PolicyConfig(seed=0)),
        Contender("b", spec, PolicyConfig(seed=1)),
    )
    study = dataclasses.replace(study, contenders=copies)
    outcomes = simulate_seeds(study, range(repetitions * seeds))
    rejected = 0
    for r in range(repetitions):
        block = [o for o in outcomes if r * seeds <= o.seed < (r + 1) * seeds]
        a = [o for o in block if o.policy == "a"]
        b = [o for o in block if o.policy == "b"]
        assert [o.overall.reward for o in a] != [o.overall.reward for o in b]  # not clones
        if versus(a, b).p_value < ALPHA:
            rejected += 1
    bound = ALPHA + 1.96 * math.sqrt(ALPHA * (1 - ALPHA) / repetitions)
    assert rejected / repetitions <= bound, f"{rejected} of {repetitions} declared different"
