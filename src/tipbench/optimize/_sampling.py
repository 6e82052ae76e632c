"""GEPA's two random choices, made a function of (seed, iteration) alone.

Each iteration GEPA picks a parent from the Pareto front (`ParetoCandidateSelector`: a
program at random, weighted by how many training scenarios it is best on) and a minibatch of
training scenarios (`EpochShuffledBatchSampler`: epochs of shuffled scenarios, taken in
turn). GEPA draws both from one `random.Random(seed)` that lives in memory, so a run that
resumes after Ctrl-C would draw differently from one that never stopped. Here each draw is
seeded by the seed and the iteration: a resumed optimization makes the very choices an
uninterrupted one makes (the evaluations it repeats are read back from the store).
"""

from __future__ import annotations

import random
from typing import Any

from gepa.core.data_loader import DataLoader
from gepa.core.state import GEPAState
from gepa.gepa_utils import select_program_candidate_from_pareto_front
from gepa.proposer.reflective_mutation.base import CandidateSelector
from gepa.strategies.batch_sampler import BatchSampler


def _rng(seed: int, purpose: str, number: int) -> random.Random:
    return random.Random(f"tipbench-optimize:{seed}:{purpose}:{number}")


class SeededParetoSelector(CandidateSelector):
    """GEPA's Pareto parent selection with a draw seeded per iteration."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def select_candidate_idx(self, state: GEPAState[Any, Any]) -> int:
        index: int = select_program_candidate_from_pareto_front(
            state.get_pareto_front_mapping(),
            state.per_program_tracked_scores,
            _rng(self.seed, "parent", state.i),
        )
        return index


class SeededEpochSampler(BatchSampler[Any, Any]):
    """GEPA's epoch-shuffled minibatches: epoch `e` is the training scenarios in an order
    seeded by `e`, and iteration `i` takes positions `i·m … i·m + m − 1` of the epochs laid
    end to end (m: the minibatch, at most the number of training scenarios)."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.seed = seed

    def next_minibatch_ids(
        self, loader: DataLoader[Any, Any], state: GEPAState[Any, Any]
    ) -> list[Any]:
        ids = list(loader.all_ids())
        size = min(self.size, len(ids))
        start = max(state.i, 0) * size
        return [self._at(ids, position) for position in range(start, start + size)]

    def _at(self, ids: list[Any], position: int) -> Any:
        epoch, index = divmod(position, len(ids))
        order = list(ids)
        _rng(self.seed, "epoch", epoch).shuffle(order)
        return order[index]
