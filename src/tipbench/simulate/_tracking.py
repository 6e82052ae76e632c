"""Recording a simulation in MLflow, like the bench: an experiment per study, a parent run for
the study, a run per policy and seed.

- parent run (`tipbench.kind=policy_simulation`): the study's params, each policy's figures
  (`reward.<policy>` with `reward_low`/`reward_high`, `regret`, `diff`, `p_value` against the
  live one), artifacts `simulation.json` (the whole report), `personas.csv` (the per-persona
  table) and `cumulative_reward.png` (cumulative reward per user by day, per policy, with
  95% bands over seeds);
- child run per (policy, seed) (`policy_simulation_seed`): params (policy and its settings,
  personas, days, users, seed), metrics (mean reward, regret, completion and dismiss rates,
  per persona), and `reward` per day as metric steps (the learning curve).

Each run is written whole by `tipbench.tracking.write_run` in three MLflow calls (create,
one batch, end) or not at all.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tipbench._errors import TrackingError
from tipbench.simulate._ab import QUALITY_LOGIT, SimAB
from tipbench.simulate._report import METRICS, over_seeds
from tipbench.simulate._simulation import Simulation
from tipbench.stats import Estimate
from tipbench.tracking import KIND_TAG, RunRecord, TrackingStore, short_error, write_run

KIND_SIMULATION = "policy_simulation"
KIND_SIMULATION_SEED = "policy_simulation_seed"
REPORT_FILE = "simulation.json"
PERSONAS_FILE = "personas.csv"
PLOT_FILE = "cumulative_reward.png"


@dataclass(frozen=True)
class SimulationRuns:
    experiment_id: str
    parent_run_id: str
    seed_runs: int


def personas_csv(simulation: Simulation) -> str:
    rows = simulation.report.persona_rows()
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def cumulative_rewards(simulation: Simulation) -> dict[str, list[Estimate]]:
    """Per policy, the reward a user has gathered by the end of each day (over seeds)."""
    per_day = simulation.study.population.opportunities_per_day
    curves: dict[str, list[Estimate]] = {}
    for policy in simulation.study.config.policies:
        seeds = [o for o in simulation.outcomes if o.policy == policy]
        totals = np.cumsum(np.array([o.per_day for o in seeds]) * per_day, axis=1)
        curves[policy] = [over_seeds(list(day)) for day in totals.T]
    return curves


def plot_cumulative(simulation: Simulation, path: Path) -> Path:
    """The cumulative reward per user by day, a line per policy with its 95% band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, axis = plt.subplots(figsize=(8, 4.5), layout="constrained")
    for policy, curve in cumulative_rewards(simulation).items():
        days = np.arange(1, len(curve) + 1)
        mean = [e.value for e in curve]
        label = f"{policy} (live)" if policy == simulation.report.live else policy
        (line,) = axis.plot(days, mean, marker="o", markersize=3, label=label)
        axis.fill_between(
            days, [e.low for e in curve], [e.high for e in curve], color=line.get_color(), alpha=0.2
        )
    config = simulation.study.config
    axis.set_title(
        f"Cumulative reward per user · {config.seeds} seeds × {config.users} users", loc="left"
    )
    axis.set_xlabel("day")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_ylabel("reward gathered (95% band over seeds)")
    axis.legend(frameon=False)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _parent(simulation: Simulation, plot: Path) -> RunRecord:
    study, report = simulation.study, simulation.report
    config = study.config
    metrics: dict[str, float] = {"oracle_reward": report.oracle.value}
    for policy in report.policies:
        for name in METRICS:
            metrics[f"{name}.{policy.policy}"] = policy.overall[name].value
        metrics[f"reward_low.{policy.policy}"] = policy.overall["reward"].low
        metrics[f"reward_high.{policy.policy}"] = policy.overall["reward"].high
        if policy.vs_live is not None:
            metrics[f"diff.{policy.policy}"] = policy.vs_live.difference.value
            metrics[f"p_value.{policy.policy}"] = policy.vs_live.p_value
    best = max(report.policies, key=lambda p: p.overall["reward"].value)
    return RunRecord(
        run_name=f"simulate {','.join(config.policies)}",
        params={
            "policies": ",".join(config.policies),
            "live": report.live,
            "seeds": str(config.seeds),
            "first_seed": str(config.first_seed),
            "days": str(config.days),
            "users": str(config.users),
            "personas": ",".join(study.population.persona_ids),
            "population_hash": study.population.content_hash,
            "suite": study.suite_label,
        },
        tags={KIND_TAG: KIND_SIMULATION, "live": report.live, "best": best.policy},
        metrics={k: v for k, v in metrics.items() if np.isfinite(v)},
        artifacts={
            REPORT_FILE: json.dumps(report.to_dict(), indent=2),
            PERSONAS_FILE: personas_csv(simulation),
        },
        files={PLOT_FILE: plot},
    )


def _seed_runs(simulation: Simulation) -> list[RunRecord]:
    study = simulation.study
    config = study.config
    records = []
    for outcome in simulation.outcomes:
        contender = next(c for c in study.contenders if c.label == outcome.policy)
        settings = contender.config.model_dump()
        metrics = {
            "mean_reward": outcome.overall.reward,
            "regret": outcome.overall.regret,
            "completion_rate": outcome.overall.completion,
            "dismiss_rate": outcome.overall.dismiss,
            "oracle_reward": outcome.oracle_reward,
            "decisions": float(outcome.overall.decisions),
        }
        for persona, figures in outcome.per_persona.items():
            metrics[f"reward.{persona}"] = figures.reward
        records.append(
            RunRecord(
                run_name=f"{outcome.policy} seed {outcome.seed}",
                params={
                    "policy": outcome.policy,
                    "features": contender.spec.features,
                    **{key: str(value) for key, value in settings.items()},
                    "world_seed": str(outcome.seed),
                    "days": str(config.days),
                    "users": str(config.users),
                    "personas": ",".join(study.population.persona_ids),
                },
                tags={KIND_TAG: KIND_SIMULATION_SEED, "policy": outcome.policy},
                metrics=metrics,
                artifacts={},
                series={"reward": outcome.per_day},
            )
        )
    return records


def log_simulation(store: TrackingStore, experiment: str, simulation: Simulation) -> SimulationRuns:
    """Record the study in `experiment` (created if new); returns where.

    Raises:
        TrackingError: the store cannot be used (a half-written run is removed).
    """
    experiment_id = store.experiment_id(experiment, create=True)
    seeds = _seed_runs(simulation)
    try:
        with tempfile.TemporaryDirectory(prefix="tipbench-sim-") as tmp:
            plot = plot_cumulative(simulation, Path(tmp) / PLOT_FILE)
            parent = write_run(store.client, experiment_id, _parent(simulation, plot))
        for record in seeds:
            write_run(store.client, experiment_id, record, parent_run_id=parent)
    except Exception as exc:
        raise TrackingError(
            f"cannot record the simulation at {store.shown_uri}: {short_error(exc)}"
        ) from None
    return SimulationRuns(experiment_id, parent, len(seeds))


KIND_SIM_AB = "policy_sim_ab"
AB_REPORT_FILE = "sim_ab.json"


def log_sim_ab(store: TrackingStore, experiment: str, ab: SimAB, tips_from: str) -> SimulationRuns:
    """Record a sim A/B as one run of `experiment` (created if new): the study's params, each
    arm's reward with its interval and paired difference from the baseline (metric names
    with `/` for the source's `|`), and the whole report as `sim_ab.json`.

    Raises:
        TrackingError: the store cannot be used.
    """
    config, report = ab.study.config, ab.report
    metrics: dict[str, float] = {"reference_composite": ab.reference}
    for arm in report.policies:
        key = arm.policy.replace("|", "/")
        reward = arm.overall["reward"]
        metrics |= {
            f"reward.{key}": reward.value,
            f"reward_low.{key}": reward.low,
            f"reward_high.{key}": reward.high,
        }
        if arm.vs_live is not None:
            metrics |= {
                f"diff.{key}": arm.vs_live.difference.value,
                f"p_value.{key}": arm.vs_live.p_value,
            }
    document = {
        **report.to_dict(),
        "tips_from": tips_from,
        "policy": config.live_policy,
        "quality_logit": QUALITY_LOGIT,
        "reference_composite": ab.reference,
        "arms": [
            {"source": p.source, "tips": len(p.tips), "mean_composite": p.mean_composite}
            for p in ab.pools
        ],
    }
    record = RunRecord(
        run_name=f"sim A/B of {tips_from}",
        params={
            "tips_from": tips_from,
            "policy": config.live_policy,
            "baseline": report.live,
            "sources": ",".join(p.source for p in ab.pools),
            "seeds": str(config.seeds),
            "first_seed": str(config.first_seed),
            "days": str(config.days),
            "users": str(config.users),
            "quality_logit": str(QUALITY_LOGIT),
            "population_hash": ab.study.population.content_hash,
        },
        tags={KIND_TAG: KIND_SIM_AB, "baseline": report.live},
        metrics={k: v for k, v in metrics.items() if np.isfinite(v)},
        artifacts={AB_REPORT_FILE: json.dumps(document, indent=2)},
    )
    try:
        experiment_id = store.experiment_id(experiment, create=True)
        run_id = write_run(store.client, experiment_id, record)
    except Exception as exc:
        raise TrackingError(
            f"cannot record the sim A/B at {store.shown_uri}: {short_error(exc)}"
        ) from None
    return SimulationRuns(experiment_id, run_id, 0)
