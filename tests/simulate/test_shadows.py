"""The shadow learning rule is the simulator's choice: unweighted updates make better shadows
than updates weighted by 1/propensity in the bundled scenario, and an unweighted egreedy-v2
shadow comes to choose better than the live egreedy-v1 policy whose traffic it learns from
(its true value against the live policy's in the same worlds, paired by seed)."""

from __future__ import annotations

import pytest

from tipbench.policies import SHADOW_WEIGHTING, shadow_weight
from tipbench.simulate import SimulationConfig, shadow_study


def test_unweighted_shadow_learning_is_the_rule_and_wins() -> None:
    assert SHADOW_WEIGHTING == "none"
    plain, weighted = shadow_study(
        SimulationConfig(policies=("egreedy-v1", "egreedy-v2", "linucb"))
    )
    assert (plain.weighting, weighted.weighting) == ("none", "inverse-propensity")
    for shadow in ("egreedy-v2", "linucb"):
        assert weighted.vs_first[shadow].difference.value < 0
    assert weighted.vs_first["egreedy-v2"].p_value < 0.05
    # a shadow learning from the live policy's traffic beats the live v1 policy it watches:
    # its true value exceeds the live policy's in the same worlds (paired by seed)
    beats = plain.vs_live["egreedy-v2"]
    assert beats.n_pairs == 20 and beats.difference.low > 0 and beats.p_value < 0.05
    gain = beats.difference.value
    assert plain.values["egreedy-v2"].value == pytest.approx(plain.live.value + gain)
    assert plain.live == weighted.live  # the rule changes what shadows learn, not the live policy


def test_the_weights() -> None:
    import numpy as np

    p = np.array([0.025, 0.5, 1.0])
    assert list(shadow_weight(p)) == [1.0, 1.0, 1.0]
    assert list(shadow_weight(p, "inverse-propensity")) == [40.0, 2.0, 1.0]
