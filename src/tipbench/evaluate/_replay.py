"""A registered policy replayed on the log: its counterfactual probabilities, decision by
decision, from the service's own decision code.

The policy starts cold and goes through the rewarded decisions in log order as a shadow
would have: it scores each request on the logged features (its version's: v1 is the start
of every logged vector; v2 needs a logged v2 vector) with `tipbench.policies.choose`, then
learns from the shown candidate's reward with the shadow rule (`shadow_weight`). A
`Replayer` goes through a log chunk by chunk, keeping only its models.
"""

from __future__ import annotations

import numpy as np

from tipbench._errors import ConfigError
from tipbench.evaluate._traffic import Ints, Traffic
from tipbench.policies import ArmBank, PolicyConfig, Vector, choose, policy_spec, shadow_weight


class CannotReplay(ConfigError):
    """The log lacks the features the policy reads."""


class Replayer:
    """One policy replayed over a log's chunks, in log order."""

    def __init__(self, policy: str, config: PolicyConfig | None = None) -> None:
        """Raises: ConfigError: an unknown policy."""
        self.policy = policy
        self.spec = policy_spec(policy)
        self.config = config or PolicyConfig()
        self.bank = ArmBank(1, (), self.spec.dimension, self.config.ridge)
        self.missing = 0  # rewarded decisions without the features it reads

    @property
    def failure(self) -> str | None:
        """Why it cannot be replayed on the log read so far, or None."""
        if not self.missing:
            return None
        return (
            f"cannot replay {self.policy}: {self.missing:,} rewarded decisions have no v2 "
            "features logged (run a v2 policy as a shadow to log them)"
        )

    def _grow(self, categories: int) -> None:
        """Room for `categories` category models (the new ones cold)."""
        have = len(self.bank.categories)
        if categories <= have:
            return
        grown = ArmBank(
            1, [str(c) for c in range(categories)], self.spec.dimension, self.config.ridge
        )
        for name in ("xx", "rx", "n", "a_inverse", "theta"):
            getattr(grown, name)[:, :have] = getattr(self.bank, name)
        self.bank = grown

    def step(self, traffic: Traffic, codes: Ints, categories: int) -> Vector | None:
        """(n, K) its probabilities at each rewarded decision of the chunk (category indices
        `codes` among `categories`); None once the log lacks its features (`failure`)."""
        x = traffic.x_v1 if self.spec.features == "v1" else traffic.x_v2
        self.missing += int(np.isnan(x).any(axis=1).sum())
        if self.missing:
            return None
        self._grow(categories)
        row = np.zeros(1, dtype=np.intp)
        u = np.zeros(1)
        weights = shadow_weight(traffic.propensity())
        probabilities = np.zeros(traffic.mask.shape)
        widths = self.spec.kind == "linucb"
        for i in range(traffic.n):
            k = int(traffic.mask[i].sum())
            here = codes[i : i + 1, :k]
            theta, a_inverse = self.bank.candidates(here, row, widths=widths)
            choice = choose(self.spec, self.config, x[i : i + 1], theta, a_inverse, u)
            probabilities[i, :k] = choice.probabilities[0]
            shown = here[:, traffic.chosen[i]]
            self.bank.learn(row, shown, x[i : i + 1], traffic.reward[i : i + 1], weights[i : i + 1])
        return probabilities


def replay(traffic: Traffic, policy: str, config: PolicyConfig | None = None) -> Vector:
    """(n, K) the policy's probabilities at each rewarded decision of `traffic`.

    Raises:
        ConfigError: an unknown policy.
        CannotReplay: a v2 policy on a log without v2 features.
    """
    replayer = Replayer(policy, config)
    names = traffic.category_names
    probabilities = replayer.step(traffic, traffic.category_codes(names), len(names))
    if probabilities is None:
        raise CannotReplay(replayer.failure)
    return probabilities
