"""The decision log in Vowpal Wabbit's DSJson, one event per line, so that VW can train and
evaluate contextual-bandit learners on it (`vw --cb_explore_adf --dsjson -d log.json`).

An event is the decision the deciding policy made (shadows' would-be choices are not events):

    {"_label_cost": -reward, "_label_probability": propensity, "_label_Action": k + 1,
     "_labelIndex": k, "Timestamp": "...Z", "Version": "1", "EventId": decision id,
     "a": [chosen + 1, the others + 1 by falling probability], "p": [their probabilities],
     "c": {"Context": {feature: value, ...}, "_multi": [{"Tip": {"id": tip_id,
                                                               "category": category},
                                                       "Source": {"model": ..., ...}}, ...]}}

with k the chosen candidate's 0-based position. VW minimises cost, so the cost is the
negated reward. The shared namespace `Context` holds the features the policy decided on, by
name (VW adds its own constant, so `bias` is left out); each action's namespace `Tip` holds its
id and category: `--interactions CT` crosses them, which is what tipbench's per-category
models are. A tip with provenance has a namespace `Source` too: its model, prompt version,
experiment and run as string features (VW hashes `model=…` like any categorical feature) and
its `tip_index` as a number; `--interactions CS` lets a learner tell the sources apart, and
`--ignore S` leaves them out. A decision without a reward has no `_label_*` fields (VW only
predicts on it); an expired one carries the default reward it was settled with, if any.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tipbench.policies import FEATURE_NAMES
from tipbench.policy_service.store._records import LoggedDecision, ScoredCandidate

SHARED_NAMESPACE = "Context"
ACTION_NAMESPACE = "Tip"
SOURCE_NAMESPACE = "Source"


def dsjson_event(logged: LoggedDecision) -> dict[str, Any]:
    """One decision as a DSJson event."""
    record = logged.record
    decision = record.decision
    names = FEATURE_NAMES[decision.feature_version]  # type: ignore[index]
    chosen = next(i for i, c in enumerate(decision.candidates) if c.tip_id == decision.tip_id)
    others = sorted(
        (i for i in range(len(decision.candidates)) if i != chosen),
        key=lambda i: -decision.candidates[i].probability,
    )
    ranking = [chosen, *others]
    event: dict[str, Any] = {}
    reward = logged.reward
    if reward is not None and reward.reward is not None:
        event.update(
            {
                "_label_cost": -reward.reward or 0.0,  # no -0.0
                "_label_probability": decision.propensity,
                "_label_Action": chosen + 1,
                "_labelIndex": chosen,
            }
        )
    event.update(
        {
            "Timestamp": _timestamp(record.created_at),
            "Version": "1",
            "EventId": record.id,
            "a": [i + 1 for i in ranking],
            "c": {
                SHARED_NAMESPACE: {
                    name: value
                    for name, value in zip(names, decision.features, strict=True)
                    if name != "bias"
                },
                "_multi": [_action(c) for c in decision.candidates],
            },
            "p": [decision.candidates[i].probability for i in ranking],
        }
    )
    return event


def _action(candidate: ScoredCandidate) -> dict[str, Any]:
    action: dict[str, Any] = {
        ACTION_NAMESPACE: {"id": candidate.tip_id, "category": candidate.category}
    }
    if candidate.source is not None:
        action[SOURCE_NAMESPACE] = candidate.source.fields()
    return action


def _timestamp(iso: str) -> str:
    """DSJson's `2021-07-29T10:00:00.999Z` (UTC, milliseconds)."""
    moment = datetime.fromisoformat(iso).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
