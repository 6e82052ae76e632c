"""The simulator's worlds played end to end through a running `tipbench policy serve` (`--url`).

What it is for: driving simulated users through a real server as the app would, so that the
server decides, learns and logs as in production, and its decision log holds `/serve`
traffic with every shadow's would-be choice, which `policy evaluate` and `policy promote`
read. Every opportunity is a `POST /serve` (the server's live policy decides; each of its
shadows scores the request and logs its probabilities) carrying the user's
`profile_features`, and the simulated response to the tip served goes to `POST /reward`, so
the live policy and every shadow learn from it. The report gives the live policy's figures
and each shadow's: what its would-be choices would have earned in the same world (each
candidate's outcome is drawn before anyone chooses), paired by seed with the live policy's.

Simulated users live in a namespace of their own (`sim-<run>-s<seed>-u<user>`), each request
carries an event id (`sim-<run>-s<seed>-k<opportunity>`), so a retried request makes no
second decision, and nothing is reset or deleted: earlier decisions, simulated or not, stay
in the log. The seeds are played one after another on the server's learning state, so they
are not independent (a policy keeps learning from one to the next): the report says so.

A server whose state already holds decisions belongs to someone: it is refused unless the
caller says otherwise (`shared=True`), since the simulated rewards train its models.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import SecretStr

from tipbench._errors import ConfigError
from tipbench._tokens import read_tokens
from tipbench.policies import PolicyConfig
from tipbench.simulate._outcome import SeedOutcome, seed_outcome
from tipbench.simulate._report import summarise
from tipbench.simulate._simulation import Simulation, SimulationConfig, Study, load_study
from tipbench.simulate._world import Ints, World, make_world

TIMEOUT_S = 30.0
Progress = Callable[[str], None]


@dataclass(frozen=True)
class RemoteTarget:
    url: str
    token: str  # the serving token (serve, reward, stats, config)
    shared: bool = False  # simulate beside other users' decisions

    @classmethod
    def from_environment(cls, url: str, shared: bool = False) -> RemoteTarget:
        """The serving token from `TIPBENCH_POLICY_TOKEN`(`_FILE`), as the service reads it.

        Raises:
            ConfigError: no serving token.
        """
        env = os.environ
        value, file = env.get("TIPBENCH_POLICY_TOKEN"), env.get("TIPBENCH_POLICY_TOKEN_FILE")
        token = read_tokens(
            SecretStr(value) if value else None,
            Path(file) if file else None,
            kind="service",
            variable="TIPBENCH_POLICY_TOKEN",
        )[0]
        return cls(url.rstrip("/"), token, shared)


@dataclass(frozen=True)
class ServerRoles:
    """What the server serves with: its live policy, its shadows and their settings."""

    live: str
    shadows: tuple[str, ...]
    settings: Mapping[str, PolicyConfig]


class _Server:
    def __init__(self, target: RemoteTarget) -> None:
        self.target = target
        self.client = httpx.Client(base_url=target.url, timeout=TIMEOUT_S)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = self.client.request(
                method, path, json=body, headers={"Authorization": f"Bearer {self.target.token}"}
            )
        except httpx.HTTPError as exc:
            raise ConfigError(f"policy service at {self.target.url}: {exc}") from None
        if response.status_code >= 400:
            detail = response.text[:300].replace("\n", " ")
            raise ConfigError(
                f"policy service at {self.target.url}: {method} {path} answered "
                f"{response.status_code}: {detail}"
            )
        return response.json()

    def roles(self) -> ServerRoles:
        config = self.call("GET", "/config")
        settings = {
            name: PolicyConfig.model_validate(values) for name, values in config["policies"].items()
        }
        return ServerRoles(config["live"], tuple(config["shadows"]), settings)

    def close(self) -> None:
        self.client.close()


def _decisions_held(server: _Server) -> int:
    stats = server.call("GET", "/stats")
    return sum(int(p["decisions"]) for p in stats["policies"].values())


def _request(world: World, study: Study, k: int, namespace: str) -> dict[str, Any]:
    """The `/serve` body of opportunity k, as the app would send it."""
    candidates = [study.catalogue.tips[t] for t in world.tips[k]]
    user = int(world.schedule.user[k])
    profile = world.users.profiles[user]
    moment = world.schedule.moment(k)
    return {
        "event_id": f"{namespace}-s{world.seed}-k{k}",
        "user_id": f"{namespace}-s{world.seed}-u{user}",
        "context": {
            "local_hour": moment.local_hour,
            "weekday": moment.weekday,
            "open_tasks": moment.open_tasks,
            "minutes_to_deadline": moment.minutes_to_deadline,
            "tips_today": moment.tips_today,
        },
        "candidates": [{"tip_id": t.id, "category": t.category} for t in candidates],
        "profile_features": {
            "completion_rate": profile.completion_rate,
            "dismiss_rate": profile.dismiss_rate,
            "mean_dwell_s": profile.mean_dwell_s,
            "preferred_hour": profile.preferred_hour,
            "tips_seen": profile.tips_seen,
        },
    }


def _serve_world(
    server: _Server, study: Study, world: World, roles: ServerRoles, namespace: str
) -> dict[str, Ints]:
    """Serve and reward every opportunity of the world; each policy's choice at each one
    (a shadow's: the tip it would have shown)."""
    chosen = {name: np.zeros(world.steps, dtype=np.int64) for name in (roles.live, *roles.shadows)}
    for k in range(world.steps):
        body = _request(world, study, k, namespace)
        tips = [c["tip_id"] for c in body["candidates"]]
        answer = server.call("POST", "/serve", body)
        j = tips.index(answer["tip_id"])
        chosen[roles.live][k] = j
        for name in roles.shadows:
            chosen[name][k] = tips.index(answer["shadows"][name]["tip_id"])
        server.call(
            "POST",
            "/reward",
            {
                "decision_id": answer["decision_id"],
                "reward": float(world.reward[k, j]),
                "event": world.event(k, j),
                "dwell_s": float(world.dwell_s[k, j]),
            },
        )
    return chosen


def simulate_remote(
    config: SimulationConfig, target: RemoteTarget, progress: Progress | None = None
) -> Simulation:
    """Serve the study's worlds through the service at `target.url`: its live policy and its
    shadows, with the server's settings (the study's policies are the server's roles).

    Raises:
        ConfigError: the server cannot be reached, refuses a request, or holds other users'
            decisions and `target.shared` is not set.
    """
    server = _Server(target)
    try:
        held = _decisions_held(server)
        if held and not target.shared:
            raise ConfigError(
                f"the policy service at {target.url} holds {held:,} decisions of other users: "
                "refusing to simulate in its state (pass --shared-state to do it anyway; "
                "the simulated rewards will train its models)"
            )
        roles = server.roles()
        config = config.model_copy(
            update={"policies": (roles.live, *roles.shadows), "live": roles.live}
        )
        study = load_study(config, roles.settings)
        namespace = f"sim-{secrets.token_hex(3)}"
        outcomes: list[SeedOutcome] = []
        personas = study.population.persona_ids
        for seed in config.seed_list:
            world = make_world(study.population, study.catalogue, seed, config.users, config.days)
            if progress is not None:
                progress(f"seed {seed}: /serve {world.steps} decisions ({namespace})")
            chosen = _serve_world(server, study, world, roles, namespace)
            outcomes += [
                seed_outcome(world, name, picks, personas, config.days)
                for name, picks in chosen.items()
            ]
    finally:
        server.close()
    return Simulation(study, tuple(outcomes), summarise(outcomes, roles.live, personas))
