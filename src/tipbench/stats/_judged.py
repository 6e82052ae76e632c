"""What an estimate is made of: a leaderboard's units and the human scores sampled among them.

`Judged` holds one score on every unit (run) of a leaderboard's cells: the automatic
judge's, the human's where there is one, each unit's cell, scenario and weight (each
scenario weighing the same in its cell), and the variance floor (`stats._floor`). `Sample`
says which human scores an estimate may use and each one's probability of having been
scored (`stats._ppi` weighs each by the inverse).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

__all__ = ["Judged", "Sample"]

_Float = npt.NDArray[np.float64]
_Int = npt.NDArray[np.intp]
_Bool = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Judged:
    """One score (composite, or a criterion) on every unit (run) of a leaderboard's cells.

    Attributes:
        cell: (U,) each unit's cell, 0 .. C-1.
        scenario: (U,) each unit's scenario, pairing units of different cells.
        weight: (U,) each unit's weight in its cell's mean; a cell's weights sum to 1.
        auto: (U,) the judge's score; NaN where it did not score the unit.
        human: (U,) the human's score; NaN where no human scored it.
        known: (U,) the human's score was there before sampling began: it stands for itself.
        pool: (C,) cells that share λ (one pool per leaderboard; a simulation runs many).
        floor: The least variance of one scenario's value (`stats._floor`).
        horizon: (C, S) each cell's weight on each scenario once every run of the
            experiment is judged; None: these units are every run (`scenario_weights`).
    """

    cell: _Int
    scenario: _Int
    weight: _Float
    auto: _Float
    human: _Float
    known: _Bool
    pool: _Int
    floor: float = 0.0
    horizon: _Float | None = None

    @property
    def n_cells(self) -> int:
        return len(self.pool)

    @property
    def n_pools(self) -> int:
        return int(self.pool.max()) + 1 if len(self.pool) else 0

    @property
    def n_scenarios(self) -> int:
        return int(self.scenario.max()) + 1 if len(self.scenario) else 1

    @classmethod
    def build(
        cls,
        cell: _Int,
        scenario: _Int,
        auto: _Float,
        human: _Float,
        known: _Bool,
        pool: _Int,
        floor: float = 0.0,
    ) -> Judged:
        """Units weighted so that each scenario weighs the same in its cell (its runs share
        its weight); ``pool`` has one entry per cell."""
        c = len(pool)
        s = int(scenario.max()) + 1 if len(scenario) else 1
        flat = cell * s + scenario
        per_group = np.bincount(flat, minlength=c * s)[flat].astype(np.float64)
        groups = np.bincount(cell, weights=1.0 / per_group, minlength=c)
        weight = 1.0 / (per_group * groups[cell]) if len(cell) else np.zeros(0)
        return cls(cell, scenario, weight, auto, human, known, pool, floor)

    def scenario_weights(self) -> _Float:
        """(C, S) each cell's weight on each scenario with every run of the experiment judged:
        the design the horizon of the confidence sequences is read on (`stats._confseq`)."""
        if self.horizon is not None:
            return self.horizon
        s = self.n_scenarios
        flat = self.cell * s + self.scenario
        table = np.bincount(flat, weights=self.weight, minlength=self.n_cells * s)
        out: _Float = table.astype(np.float64).reshape(self.n_cells, s)
        return out

    def human_tier(self) -> Judged:
        """The human-scored units alone, each standing for itself, without the judge: the
        human tier's figures (a cell's mean over its human-judged scenarios). Its horizon
        stays every run's: what the human scores will cover once every run is judged."""
        scored = np.flatnonzero(~np.isnan(self.human))
        tier = Judged.build(
            self.cell[scored],
            self.scenario[scored],
            np.full(len(scored), np.nan),
            self.human[scored],
            np.ones(len(scored), dtype=bool),
            self.pool,
            self.floor,
        )
        return replace(tier, horizon=self.scenario_weights())


@dataclass(frozen=True)
class Sample:
    """The human scores an estimate may use, and the probability each had of being scored.

    Attributes:
        unit: (m,) the sampled units (each once), every one with a human score.
        inclusion: (m,) each one's inclusion probability: k / M within a cell whose M open
            units came in a uniformly shuffled order and the first k were scored; unequal
            when some runs were more likely to be served than others (`judging_order`).
    """

    unit: _Int
    inclusion: _Float

    @classmethod
    def uniform(cls, judged: Judged, unit: _Int) -> Sample:
        """A simple random sample within each cell: inclusion = scored / open units."""
        c = judged.n_cells
        sampled = np.bincount(judged.cell[unit], minlength=c).astype(np.float64)
        size = np.bincount(judged.cell[~judged.known], minlength=c).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            inclusion = (sampled / size)[judged.cell[unit]]
        return cls(np.asarray(unit, dtype=np.intp), inclusion)

    @classmethod
    def none(cls) -> Sample:
        return cls(np.zeros(0, dtype=np.intp), np.zeros(0))
