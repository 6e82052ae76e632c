"""An experiment of judged cell runs whose leaderboards are worked out by hand.

Human tier (composite per scenario; every candidate of a run scores the same):

    alpha|v1  s1..s6: 13 14 15 13 14 15, and s1 run again at 15  → s1 = 14, mean 85/6
    beta|v1   s1..s6: 11 12 12 11 12 13                         → mean 71/6
    gamma|v1  s4..s9: 14 14 14  9  9  9                         → mean 59/6
    alpha|v2  s1, s2: 17 17                                     → too few scenarios
    alpha|v1  s7: collected, not judged yet                      → ignored

Auto tier: beta|v1 12 on s1..s6 leads, delta|v1 (auto only) 11 on s1..s3, alpha|v1 10
everywhere; gamma|v1 and alpha|v2 have no auto scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from support.judged_runs import JudgedCell, uniform, write_cells
from tipbench.tracking import TrackingStore

ALPHA, BETA, GAMMA, DELTA = "ollama:alpha", "ollama:beta", "ollama:gamma", "ollama:delta"
HUMAN = {
    (ALPHA, "v1"): {"s1": 14.0, "s2": 14.0, "s3": 15.0, "s4": 13.0, "s5": 14.0, "s6": 15.0},
    (BETA, "v1"): {"s1": 11.0, "s2": 12.0, "s3": 12.0, "s4": 11.0, "s5": 12.0, "s6": 13.0},
    (GAMMA, "v1"): {"s4": 14.0, "s5": 14.0, "s6": 14.0, "s7": 9.0, "s8": 9.0, "s9": 9.0},
    (ALPHA, "v2"): {"s1": 17.0, "s2": 17.0},
}
AUTO = {
    (BETA, "v1"): {f"s{i}": 12.0 for i in range(1, 7)},
    (DELTA, "v1"): {f"s{i}": 11.0 for i in range(1, 4)},
    (ALPHA, "v1"): {f"s{i}": 10.0 for i in range(1, 7)},
}


def _cells() -> list[JudgedCell]:
    alpha = [13, 14, 15, 13, 14, 15]
    beta = [11, 12, 12, 11, 12, 13]
    gamma = [14, 14, 14, 9, 9, 9]
    cells = [
        JudgedCell(ALPHA, "v1", f"s{i}", uniform(c), uniform(10))
        for i, c in enumerate(alpha, start=1)
    ]
    cells.append(JudgedCell(ALPHA, "v1", "s1", uniform(15), uniform(10)))  # s1 again
    cells.append(JudgedCell(ALPHA, "v1", "s7"))  # pending in both tiers
    cells += [
        JudgedCell(BETA, "v1", f"s{i}", uniform(c), uniform(12))
        for i, c in enumerate(beta, start=1)
    ]
    cells += [JudgedCell(GAMMA, "v1", f"s{i}", uniform(c)) for i, c in enumerate(gamma, start=4)]
    cells += [JudgedCell(ALPHA, "v2", f"s{i}", uniform(17)) for i in (1, 2)]
    cells += [JudgedCell(DELTA, "v1", f"s{i}", auto=uniform(11)) for i in (1, 2, 3)]
    return cells


@dataclass(frozen=True)
class JudgedExperiment:
    uri: str
    name: str
    experiment_id: str
    store: TrackingStore


def make_judged_experiment(uri: str, name: str) -> JudgedExperiment:
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(name, create=True)
    write_cells(store.client, experiment_id, _cells())
    return JudgedExperiment(uri, name, experiment_id, store)
