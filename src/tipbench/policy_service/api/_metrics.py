"""What `/metrics` exposes, in Prometheus' text format (`prometheus-client`).

Each server process counts what it served itself (replicas are scraped one by one and summed
by Prometheus); the registry is the app's own, so that two apps in one process never mix.

| metric                                          | labels                  |
|-------------------------------------------------|-------------------------|
| `tipbench_policy_decisions_total`               | policy, role            |
| `tipbench_policy_rewards_total`                 | policy, role, event     |
| `tipbench_policy_reward_value_total` (Σ reward) | policy, role            |
| `tipbench_policy_expired_decisions_total`       |                         |
| `tipbench_policy_pruned_decisions_total`        |                         |
| `tipbench_policy_requests_total`                | route, method, status   |
| `tipbench_policy_request_duration_seconds`      | route, method           |
| `tipbench_policy_store_errors_total`            | route                   |

A decision's `role` is `live` or `shadow` for the policies of a `/serve` decision and `score`
for a `/score/{policy}` one; a reward's is `decider` (the policy whose decision it was) or
`shadow` (a shadow policy that learned from it). `route` is the route's path template
(`/reward/{policy}`), so that labels stay few whatever paths clients send. The process' own
CPU, memory and file descriptors come as `process_*`.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from tipbench.policy_service.api._sweeper import Sweeper
from tipbench.policy_service.store._records import DecisionRecord, Rewarded

# Latency buckets (seconds): a decision takes milliseconds; a store timeout about two seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
PREFIX = "tipbench_policy"


class ServiceMetrics:
    """The counters and histograms of one app, and their exposition."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(f"{PREFIX}_{name}", doc, labels, registry=r)

        self.decisions = counter(
            "decisions", "Decisions made, per policy and role", "policy", "role"
        )
        self.rewards = counter(
            "rewards", "Rewards learned from, per policy, role and event", "policy", "role", "event"
        )
        self.reward_value = counter(
            "reward_value",
            "Sum of the rewards learned from (÷ rewards: the mean)",
            "policy",
            "role",
        )
        self.requests = counter("requests", "HTTP requests answered", "route", "method", "status")
        self.latency = Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time to answer an HTTP request",
            ["route", "method"],
            buckets=BUCKETS,
            registry=r,
        )
        self.store_errors = counter(
            "store_errors", "Requests the state store could not answer (503)", "route"
        )
        ProcessCollector(registry=r)

    def decided(self, record: DecisionRecord) -> None:
        deciding = "live" if record.route == "serve" else "score"
        self.decisions.labels(record.decision.policy, deciding).inc()
        for shadow in record.shadows:
            self.decisions.labels(shadow.policy, "shadow").inc()

    def rewarded(self, stored: Rewarded) -> None:
        """A reward learned from, by the deciding policy and the shadows (a retry: none)."""
        reward = stored.reward
        if stored.replayed or reward.reward is None:
            return
        roles = [(stored.policy, "decider"), *((shadow, "shadow") for shadow in stored.shadows)]
        for policy, role in roles:
            self.rewards.labels(policy, role, reward.event).inc()
            self.reward_value.labels(policy, role).inc(reward.reward)

    def follow(self, sweeper: Sweeper) -> None:
        """Count the decisions `sweeper` expires and prunes (read when scraped)."""
        self.registry.register(_SweeperCollector(sweeper))

    def answered(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The metrics in the format the scraper asked for (`Accept`), and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


class _SweeperCollector(Collector):
    """The sweeper's own counts, as counters: expired and pruned by this process's sweeps."""

    def __init__(self, sweeper: Sweeper) -> None:
        self.sweeper = sweeper

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            f"{PREFIX}_expired_decisions",
            "Decisions this process's sweeps settled as expired (no reward in the window)",
            value=self.sweeper.expired,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_pruned_decisions",
            "Settled decisions this process's sweeps removed from the log (retention)",
            value=self.sweeper.pruned,
        )
