"""The arms of issue 10 that `collect_overhead.py` and `structured_server.py` both time.

Over one grid (prompts × scenarios, built with tipbench's own planner):

  (u) every request unconstrained: the backend's own speed;
  (s) every request constrained by the JSON schema: collect before `--structured`;
  (a) a replay of the requests (b) made: per cell the path (b) took (its `generation_path`:
      `free`, `free+schema` or `schema`), each free request streamed and cut where collect
      stops it (once it holds n_tips complete tips: known from (u)'s streamed answers, as
      the same prompts, seeds and model settings give the same tokens);
  (b) `tipbench collect` in its default structured mode (`auto`), and, for issue 24's
      comparison, in the modes `schema` (b:schema) and `off` (b:off).

The bare arms (u), (s), (a) send each cell's requests as written here (`request_pair`),
from a program that imports no tipbench (`_baseline_llamacpp.py`, `_baseline_openai.py`);
`_report.py` holds what an arm measured (`ArmResult`) and prints the arms' table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tipbench.backends import GenerationRequest
from tipbench.collect import AnswerDone, Cell, parse_tips
from tipbench.tracking import KIND_COLLECTION, KIND_TAG
from tipbench_dev.servers import LlamaCppServer, LlamaServer, ModelServer


def wire(name: str, request: GenerationRequest) -> dict[str, Any]:
    """A request as tipbench's backends send it (the schema as llama-cpp-python's
    `response_format`, which its OpenAI-compatible server accepts too)."""
    schema_format = (
        {"type": "json_object", "schema": request.json_schema}
        if request.json_schema is not None
        else None
    )
    return {
        "name": name,
        "messages": request.chat_messages(),
        "temperature": request.temperature,
        "seed": request.seed,
        "max_tokens": request.max_tokens,
        "repeat_penalty": request.repeat_penalty,
        "response_format": schema_format,
        "stream": request.complete is not None,  # collect streams a free answer to stop it
        "form": request.form,  # a greedy schema answer read in this form (`_forms.py`)
    }


def request_pair(cell: Cell) -> dict[str, Any]:
    """A cell's free and schema-constrained requests, by the cell's run name."""
    return {
        "name": cell.name,
        "free": wire(cell.name, cell.request(constraint="none")),
        "schema": wire(cell.name, cell.request(constraint="schema")),
    }


@dataclass(frozen=True)
class Replay:
    """What (a) replays of (b): where collect stops each free answer (decided from (u)'s
    streamed answers), and the path each cell took in (b)."""

    stops: dict[str, int]  # cell -> tokens after which its free answer is done (else absent)
    paths: Mapping[str, str] = field(default_factory=dict)  # cell -> (b)'s generation_path

    @classmethod
    def of(cls, pieces: Mapping[str, list[str]], n_tips: int) -> Replay:
        """From each cell's streamed free answer (one chunk per token)."""
        stops = {}
        for name, chunks in pieces.items():
            done, text = AnswerDone(n_tips), ""
            for count, piece in enumerate(chunks, start=1):
                text += piece
                if done(text):
                    stops[name] = count
                    break
        return cls(stops)

    def following(self, paths: Mapping[str, str]) -> Replay:
        """The replay of a run of (b) whose cells took `paths`."""
        return replace(self, paths=dict(paths))

    def requests(self, pair: Mapping[str, Any]) -> list[dict[str, Any]]:
        """(a)'s requests for a cell, as (b) made them: its free request cut where collect
        stops it, the schema request, or both. The free answer of a cell retried with the
        schema is named `NAME#free`, so that NAME holds the final answer, as (b)'s
        response.txt does."""
        name = pair["name"]
        path = self.paths.get(name, "free")
        free = pair["free"] | ({"max_tokens": self.stops[name]} if name in self.stops else {})
        if path == "schema":
            return [pair["schema"]]
        if path == "free":
            return [free]
        return [free | {"name": name + "#free"}, pair["schema"]]


def paths_of(runs: list[Any]) -> dict[str, str]:
    """Each cell's generation path, by run name, from (b)'s MLflow cell runs."""
    return {run.info.run_name: run.data.tags.get("generation_path", "?") for run in runs}


def full_cells(texts: Mapping[str, str], names: list[str], n_tips: int) -> int:
    """How many of the cells `names` have an answer that parses into `n_tips` tips."""
    return sum(len(parse_tips(texts.get(name, ""), n_tips).tips) >= n_tips for name in names)


def tipbench_command() -> list[str]:
    """The installed `tipbench` script (not a pyenv shim), else `python -m tipbench.cli`."""
    script = Path(sys.executable).parent / "tipbench"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tipbench.cli"]


def prepared_home(folder: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with a tipbench home as a user's is after their first collect: the template of
    a new SQLite store built (`tracking/_new_store.py`), so that each arm's new store is a
    copy of it, as on any machine that has collected before. Arms run with --no-cache."""
    home = {"TIPBENCH_HOME": str(folder / "tipbench-home")}
    build = "import sys; from tipbench.tracking import TrackingStore as S; S(sys.argv[1]).client"
    uri = f"sqlite:///{folder / 'prepare-home.db'}"
    subprocess.run([sys.executable, "-c", build, uri], env={**env, **home}, check=True)
    return {**env, **home}


def pin_server(server_cpus: str) -> frozenset[int] | None:
    """The CPUs for the model server (`--server-cpus`, e.g. `0`), this process and every arm
    it starts moved to the others; None (no CPUs given): nobody is pinned.

    On a small machine a server that has every core slows down whenever a client works
    (collect's MLflow writes, say), so a client's CPU shows up as the server's time; pinned,
    each client competes only with itself, as when the model is served by another machine.
    """
    if not server_cpus:
        return None
    server = frozenset(int(cpu) for cpu in server_cpus.split(","))
    others = os.sched_getaffinity(0) - server
    if not others or not server <= os.sched_getaffinity(0):
        raise SystemExit(f"--server-cpus {server_cpus}: name CPUs of this machine, not all")
    os.sched_setaffinity(0, others)
    return server


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """`--llama-server BINARY` or `--serve-model`: which server the grid runs on (default
    llama-cpp-python's `llama_cpp.server`)."""
    servers = parser.add_mutually_exclusive_group()
    servers.add_argument(
        "--llama-server",
        type=Path,
        help="serve with llama.cpp's own llama-server (this binary), not llama-cpp-python's",
    )
    servers.add_argument(
        "--serve-model",
        action="store_true",
        help="serve with `tipbench serve-model` (llama-cpp-python's server sampling as the "
        "embedded backend does), not the plain llama_cpp.server",
    )


def model_server(
    folder: Path, model: Path, args: argparse.Namespace, cpus: frozenset[int] | None
) -> LlamaCppServer:
    """The server the grid runs on (`add_server_options`): llama-cpp-python's, `tipbench
    serve-model`, or llama.cpp's own `llama-server` (`build_llama_server.sh` builds it)."""
    if args.serve_model:
        return ModelServer(folder / "server", model, cpus=cpus)
    if args.llama_server is not None:
        return LlamaServer(folder / "server", args.llama_server, model, cpus=cpus)
    return LlamaCppServer(folder / "server", model, cpus=cpus)


def server_name(args: argparse.Namespace) -> str:
    if args.serve_model:
        return "tipbench serve-model"
    return "llama_cpp.server" if args.llama_server is None else "llama-server"


def collect_requests(client: Any, experiment: str) -> int:
    """The generation requests collect made into `experiment` (its probe's included), from
    its parent runs' `requests` metric."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return 0
    parents = client.search_runs([exp.experiment_id], f"tags.`{KIND_TAG}` = '{KIND_COLLECTION}'")
    return int(sum(run.data.metrics.get("requests", 0) for run in parents))
