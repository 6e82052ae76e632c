"""`tipbench policy serve`, `policy log export` and `policy log prune`: the tip-serving policy
service."""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from tipbench._errors import ConfigError
from tipbench.cli import serving
from tipbench.cli._options import state_url

store_timeout = click.option(
    "--store-timeout",
    envvar="TIPBENCH_POLICY_STORE_TIMEOUT_S",
    type=click.FloatRange(0.05, 600),
    default=2.0,
    show_default=True,
    help="Seconds a store statement or lock wait may take before the request answers 503.",
)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Seconds, or a number with a unit: 90s, 30m, 24h, 7d."""
    if value is None:
        return None
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value)
    if not found or float(found.group(1)) <= 0:
        raise click.BadParameter(f"{value!r} is not a duration such as 90s, 30m, 24h or 7d")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def _optional_reward(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """A reward in [0, 1], or `none`."""
    if value is None or value.lower() == "none":
        return None
    try:
        reward = float(value)
    except ValueError:
        reward = -1.0
    if not 0 <= reward <= 1:
        raise click.BadParameter(f"{value!r} is not a reward in [0, 1] or none")
    return reward


# The serve options that set the serving config kept in the state, by config field.
_CONFIG_OPTIONS = {
    "live": "live",
    "shadows": "shadows",
    "reward_window": "reward_window_s",
    "default_reward": "default_reward",
    "retention": "retention_s",
}
_SETTINGS_OPTIONS = ("epsilon", "alpha", "floor", "ridge", "seed")


@click.group("policy")
def policy_group() -> None:
    """Serve tips with contextual-bandit policies, export or prune their decision log, and
    simulate, evaluate and promote them."""


@policy_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8766, show_default=True, help="TCP port."
)
@state_url
@click.option("--live", default="egreedy-v1", show_default=True, help="The live policy.")
@click.option("--shadows", default="", help="Comma-separated shadow policies [default: none].")
@click.option("--epsilon", type=float, default=0.1, show_default=True, help="ε of egreedy-*.")
@click.option("--alpha", type=float, default=1.0, show_default=True, help="α of linucb.")
@click.option("--floor", type=float, default=0.05, show_default=True, help="linucb's floor γ.")
@click.option("--ridge", type=float, default=1.0, show_default=True, help="Ridge penalty λ.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every draw.")
@click.option(
    "--reward-window",
    callback=_duration,
    help="Decisions with no reward this long after expire, e.g. 24h [default: never].",
)
@click.option(
    "--default-reward",
    callback=_optional_reward,
    help="The reward an expired decision is logged and learned with [default: none].",
)
@click.option(
    "--retention",
    callback=_duration,
    help="Prune settled decisions older than this from the log, e.g. 90d [default: keep].",
)
@click.option(
    "--reconfigure",
    is_flag=True,
    help="Apply the config options given to a state that has a config already (else they "
    "only seed a new state).",
)
@store_timeout
@click.option(
    "--sweep-interval",
    default="60s",
    show_default=True,
    callback=_duration,
    help="How often expiry and retention are applied (seconds, or 30s, 5m).",
)
@click.option("--suite", "suite_path", default=None, help="Suite whose tip catalogue to use.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="info: a line per request, with its request id.",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    /,
    host: str,
    port: int,
    state_url: str | None,
    reconfigure: bool,
    store_timeout: float,
    sweep_interval: float,
    suite_path: str | None,
    log_level: str,
    **config_options: Any,
) -> None:
    """Serve POST /serve, /score/{policy}, /reward/{policy}, /reset, GET /stats, /ready and
    /metrics.

    The roles (--live, --shadows), each policy's settings (--epsilon, --alpha, --floor,
    --ridge, --seed), --reward-window, --default-reward and --retention live in the state:
    these options seed a state that lacks them and are otherwise ignored (a line says so),
    unless --reconfigure is given; PUT /config changes them while serving.

    Every route needs a token: the serving token TIPBENCH_POLICY_TOKEN (comma-separated for
    several) or TIPBENCH_POLICY_TOKEN_FILE; TIPBENCH_POLICY_ADMIN_TOKEN for reset and roles;
    TIPBENCH_POLICY_MONITOR_TOKEN for /metrics and /ready alone. Run several replicas on one
    --state-url postgresql://... behind any load balancer.
    """
    try:
        from tipbench.policy_service import PolicyServerSettings, create_app, serve
    except ImportError as exc:
        raise ConfigError(
            f"tipbench policy serve needs the 'serve' extra ({exc.name} is missing): "
            "pip install 'tipbench[serve,policy]'"
        ) from None
    from tipbench._redact import redact_uri
    from tipbench.policy_service import PolicyService, Sweeper, open_store
    from tipbench.suite import load_suite

    settings = PolicyServerSettings()
    settings.tokens  # noqa: B018 - refuse to start without a token, before opening anything
    flags, given = _config_flags(ctx, config_options)
    catalogue = load_suite(suite_path).catalogue
    if catalogue is None:
        raise ConfigError(f"suite {suite_path}: no catalogue.yaml (the tip categories to serve)")
    store = open_store(state_url, timeout_s=store_timeout, exclusive=True)
    try:
        service = PolicyService(store, catalogue)
        seeding = service.seed(flags, given, reconfigure=reconfigure)
    except BaseException:
        store.close()
        raise
    _report_seeding(seeding)
    sweeper = Sweeper(service, sweep_interval)
    app = create_app(service, settings, sweeper)
    where = redact_uri(state_url) if state_url else "the SQLite store in $TIPBENCH_HOME"
    click.echo(f"tipbench policy service on http://{host}:{port} (state: {where})", err=True)
    serving()
    started = True
    with sweeper, contextlib.suppress(KeyboardInterrupt):
        # uvicorn re-raises the signal it stopped on
        started = serve(app, settings, host, port, log_level)
    if not started:  # the socket could not be bound (uvicorn has said why)
        sys.exit(3)


def _config_flags(
    ctx: click.Context, options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config document of every option (defaults included), and of the options given.

    Raises:
        pydantic.ValidationError: a setting is out of range (named by its option).
        ConfigError: a role is unknown or repeated.
    """
    from tipbench.policies import POLICIES, PolicyConfig
    from tipbench.policy_service import ServingConfig, check_roles

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    shadows = [s.strip() for s in options["shadows"].split(",") if s.strip()]
    check_roles(options["live"], shadows)
    values = {field: options[name] for name, field in _CONFIG_OPTIONS.items()}
    values["shadows"] = shadows
    settings = PolicyConfig(**{name: options[name] for name in _SETTINGS_OPTIONS})
    flags = ServingConfig(**values, policies=dict.fromkeys(POLICIES, settings))
    document: dict[str, Any] = {
        field: list(value) if isinstance(value, tuple) else value
        for field, value in flags.model_dump(exclude={"policies"}).items()
    }
    document["policies"] = {name: settings.model_dump() for name in POLICIES}
    chosen: dict[str, Any] = {
        field: document[field] for name, field in _CONFIG_OPTIONS.items() if given(name)
    }
    changed = {name: getattr(settings, name) for name in _SETTINGS_OPTIONS if given(name)}
    if changed:
        chosen["policies"] = dict.fromkeys(POLICIES, changed)
    return document, chosen


def _report_seeding(seeding: Any) -> None:
    config = seeding.config
    roles = f"live {config.live}, shadows [{', '.join(config.shadows)}]"
    if seeding.seeded:
        click.echo(f"policy config seeded from the options: {roles}", err=True)
    elif seeding.changed:
        click.echo(f"policy config changed (--reconfigure): {'; '.join(seeding.changed)}", err=True)
    if seeding.ignored:
        click.echo(
            f"policy config kept from the state ({roles}); not applied: "
            f"{'; '.join(seeding.ignored)} (pass --reconfigure to apply them)",
            err=True,
        )


@policy_group.group("log")
def log_group() -> None:
    """The decision log: every decision with its context, choice, propensity and reward."""


@log_group.command("export")
@state_url
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "parquet", "dsjson"]),
    default="jsonl",
    show_default=True,
    help="JSON lines, Parquet, or Vowpal Wabbit's DSJson.",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="File to write."
)
def export_command(state_url: str | None, fmt: str, out: Path) -> None:
    """Export the decision log (for off-policy evaluation, audits, or training with VW)."""
    from tipbench.policy_service import LOG_FORMATS, export_log, open_store

    store = open_store(state_url, create=False)
    try:
        count = export_log(store, out, next(f for f in LOG_FORMATS if f == fmt))
    finally:
        store.close()
    click.echo(f"{count} decisions written to {out}")


@log_group.command("prune")
@state_url
@click.option(
    "--older-than",
    callback=_duration,
    help="Prune settled decisions older than this, e.g. 90d [default: the state's retention].",
)
@store_timeout
def prune_command(state_url: str | None, older_than: float | None, store_timeout: float) -> None:
    """Delete settled (rewarded or expired) decisions older than the retention from the log.

    Decisions still waiting for their reward stay. What pruned decisions taught stays in the
    models, kept per user, so that erasing a user later still takes it back.
    """
    from tipbench.policy_service import PolicyService, open_store
    from tipbench.suite import load_suite

    store = open_store(state_url, create=False, timeout_s=store_timeout)
    try:
        catalogue = load_suite().catalogue
        assert catalogue is not None
        service = PolicyService(store, catalogue)
        expired = service.expire()
        pruned = service.prune(older_than)
    finally:
        store.close()
    if expired:
        click.echo(f"{expired} decisions past the reward window expired")
    click.echo(f"{pruned} decisions pruned")


# The policy gate's commands (simulate, evaluate, promote) live in their own module; the sim
# A/B of the bench's tips (`simulate --tips-from`) in its own.
from tipbench.cli._policy_gate import (  # noqa: E402
    _settings,
    _study,
    evaluate_command,
    promote_command,
    simulate_command,
)
from tipbench.cli._sim_ab import with_tips_from  # noqa: E402

policy_group.add_command(with_tips_from(simulate_command, _study, _settings))
policy_group.add_command(evaluate_command)
policy_group.add_command(promote_command)
