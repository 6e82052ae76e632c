"""`tipbench policy simulate --tips-from EXPERIMENT`: a sim A/B of the bench's tips, an arm per
(model, prompt) served to the simulated users by the live policy, paired by seed.

`with_tips_from` adds `--tips-from` and `--baseline` to `policy simulate` and answers the
command itself when `--tips-from` is given (the rest of its options mean what they always do:
the worlds, the seeds, the live policy's settings, where the study is recorded).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import click

from tipbench._errors import ConfigError
from tipbench.policies import PolicyConfig
from tipbench.simulate import (
    QUALITY_LOGIT,
    SimulationConfig,
    bench_tips,
    log_sim_ab,
    render_report,
    sim_ab,
)
from tipbench.tracking import TrackingStore

Study = Callable[..., SimulationConfig]
Settings = Callable[[float | None, float | None, float | None], dict[str, PolicyConfig]]
_STUDY = ("policies", "live", "seeds", "first_seed", "days", "users", "suite")


def with_tips_from(command: click.Command, study: Study, settings: Settings) -> click.Command:
    """`command` (`policy simulate`) with `--tips-from` and `--baseline`, answered by a sim A/B
    when `--tips-from` is given (`study` and `settings` read the command's other options as
    the command does)."""
    original = command.callback
    assert original is not None

    def callback(*args: Any, tips_from: str | None, baseline: str | None, **kw: Any) -> Any:
        if tips_from is None:
            if baseline is not None:
                raise ConfigError("--baseline goes with --tips-from")
            return original(*args, **kw)
        if kw.get("url") is not None:
            raise ConfigError("--tips-from simulates in-process: drop --url")
        config = study(**{name: kw.get(name) for name in _STUDY})
        chosen = settings(kw.get("epsilon"), kw.get("alpha"), kw.get("floor"))
        run_sim_ab(
            config, chosen, tips_from, baseline, kw["experiment"], kw.get("tracking_uri"), kw["fmt"]
        )
        return None

    command.callback = callback
    command.params += [
        click.Option(
            ["--tips-from"],
            default=None,
            help="Sim A/B: serve the judged tips of this bench experiment, an arm per (model, "
            "prompt), by the live policy; users respond to each tip's judged composite.",
        ),
        click.Option(["--baseline"], default=None, help="With --tips-from: the arm compared with."),
    ]
    return command


def run_sim_ab(
    config: SimulationConfig,
    settings: Mapping[str, PolicyConfig],
    tips_from: str,
    baseline: str | None,
    experiment: str,
    tracking_uri: str | None,
    fmt: str,
) -> None:
    """Serve each source's judged tips to the same simulated worlds, report and record it."""
    store = TrackingStore(tracking_uri)
    ab = sim_ab(config, bench_tips(store, tips_from), baseline=baseline, settings=settings)
    runs = log_sim_ab(store, experiment, ab, tips_from)
    report = ab.report
    if fmt == "json":
        document = {**report.to_dict(), "run_id": runs.parent_run_id, "tips_from": tips_from}
        click.echo(json.dumps(document | {"reference_composite": ab.reference}))
        return
    per_seed = config.users * config.days * ab.study.population.opportunities_per_day
    header = (
        f"sim A/B of the judged tips of {tips_from!r}: {len(ab.pools)} sources served by "
        f"{config.live_policy} to the same worlds, {config.seeds} seeds × {config.users} users "
        f"× {config.days} days ({per_seed:,} decisions per seed and source); baseline "
        f"{report.live}\nthe users respond to a tip's judged composite: {QUALITY_LOGIT:g} "
        f"log-odds of completing per point above the mean {ab.reference:.2f} (stated, not "
        "measured)"
    )
    for line in render_report(report, header):
        click.echo(line.replace("vs live (paired by seed)", "vs baseline (paired by seed)"))
    click.echo(f"\nrecorded in MLflow: experiment {experiment!r}, run {runs.parent_run_id}")
