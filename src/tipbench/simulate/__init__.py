"""The policy simulator (`tipbench policy simulate`): simulated users with a hidden response
model, the same worlds for every policy (common random numbers), policies that decide and
learn with the service's own code, and a report with CIs over seeds and paired differences.

    SimulationConfig ─▶ simulate() ─▶ Simulation(report: SimulationReport, outcomes)
                        simulate_seeds() per seed ─▶ SeedOutcome ─▶ summarise()  (the DAG)
"""

from tipbench.simulate._outcome import Metrics, SeedOutcome, seed_outcome
from tipbench.simulate._play import Contender, Played, Served, play, serve, uniforms
from tipbench.simulate._render import paired_interval
from tipbench.simulate._report import (
    METRICS,
    Estimate,
    PolicyReport,
    SimulationReport,
    paired_dict,
    summarise,
    versus,
)
from tipbench.simulate._shadows import ShadowRule, shadow_study, true_values
from tipbench.simulate._simulation import (
    DEFAULT_DAYS,
    DEFAULT_EXPERIMENT,
    DEFAULT_POLICIES,
    DEFAULT_SEEDS,
    DEFAULT_USERS,
    Simulation,
    SimulationConfig,
    Study,
    load_study,
    simulate,
    simulate_seeds,
)
from tipbench.simulate._world import World, make_world

__all__ = [
    "DEFAULT_DAYS",
    "DEFAULT_EXPERIMENT",
    "DEFAULT_POLICIES",
    "DEFAULT_SEEDS",
    "DEFAULT_USERS",
    "METRICS",
    "Contender",
    "Estimate",
    "Metrics",
    "Played",
    "PolicyReport",
    "SeedOutcome",
    "Served",
    "ShadowRule",
    "Simulation",
    "SimulationConfig",
    "SimulationReport",
    "Study",
    "World",
    "load_study",
    "make_world",
    "paired_dict",
    "paired_interval",
    "play",
    "seed_outcome",
    "serve",
    "shadow_study",
    "simulate",
    "simulate_seeds",
    "summarise",
    "true_values",
    "uniforms",
    "versus",
]
