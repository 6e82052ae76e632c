"""The policy simulator (`tipbench policy simulate`): simulated users with a hidden response
model, the same worlds for every policy (common random numbers), policies that decide and
learn with the service's own code, and a report with CIs over seeds and paired differences.

    SimulationConfig ─▶ simulate() ─▶ Simulation(report: SimulationReport, outcomes)
                        simulate_seeds() per seed ─▶ SeedOutcome ─▶ summarise()  (the DAG)
    simulate_remote(config, RemoteTarget) ─▶ Simulation     (through a running server)
    bench_tips(store, EXPERIMENT) ─▶ TipPool… ─▶ sim_ab(config, pools) ─▶ SimAB  (sim A/B: the
                      bench's judged tips served, an arm per source, paired by seed)
    render_report(report, header) ─▶ lines;  log_simulation(store, experiment, simulation) ─▶ MLflow

`simulate_remote` (httpx) and the MLflow recording load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tipbench._lazy import lazy_exports
from tipbench.simulate._ab import QUALITY_LOGIT, BenchTip, SimAB, TipPool, bench_tips, sim_ab
from tipbench.simulate._outcome import Metrics, SeedOutcome, seed_outcome
from tipbench.simulate._play import Contender, Played, Served, play, serve, uniforms
from tipbench.simulate._render import paired_interval, render_report
from tipbench.simulate._report import (
    METRICS,
    PolicyReport,
    SimulationReport,
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

if TYPE_CHECKING:
    from tipbench.simulate._remote import RemoteTarget, simulate_remote
    from tipbench.simulate._tracking import (
        KIND_SIM_AB,
        KIND_SIMULATION,
        PLOT_FILE,
        REPORT_FILE,
        SimulationRuns,
        log_sim_ab,
        log_simulation,
    )
else:
    __getattr__ = lazy_exports(
        __name__,
        {
            "KIND_SIMULATION": "_tracking",
            "KIND_SIM_AB": "_tracking",
            "PLOT_FILE": "_tracking",
            "REPORT_FILE": "_tracking",
            "RemoteTarget": "_remote",
            "SimulationRuns": "_tracking",
            "log_sim_ab": "_tracking",
            "log_simulation": "_tracking",
            "simulate_remote": "_remote",
        },
    )

__all__ = [
    "DEFAULT_DAYS",
    "DEFAULT_EXPERIMENT",
    "DEFAULT_POLICIES",
    "DEFAULT_SEEDS",
    "DEFAULT_USERS",
    "KIND_SIMULATION",
    "KIND_SIM_AB",
    "METRICS",
    "PLOT_FILE",
    "QUALITY_LOGIT",
    "REPORT_FILE",
    "BenchTip",
    "Contender",
    "Metrics",
    "Played",
    "PolicyReport",
    "RemoteTarget",
    "SeedOutcome",
    "Served",
    "ShadowRule",
    "SimAB",
    "Simulation",
    "SimulationConfig",
    "SimulationReport",
    "SimulationRuns",
    "Study",
    "TipPool",
    "World",
    "bench_tips",
    "load_study",
    "log_sim_ab",
    "log_simulation",
    "make_world",
    "paired_interval",
    "play",
    "render_report",
    "seed_outcome",
    "serve",
    "shadow_study",
    "sim_ab",
    "simulate",
    "simulate_remote",
    "simulate_seeds",
    "summarise",
    "true_values",
    "uniforms",
    "versus",
]
