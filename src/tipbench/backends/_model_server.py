"""`tipbench serve-model`: a GGUF model behind an OpenAI-compatible API, sampled as the
embedded backend samples it.

It is llama-cpp-python's server (`llama_cpp.server`) with three changes. The model loads on
plain CPU buffers, as the embedded backend loads it (`_llamacpp.py`), on the cores free at
start (`_threads.py`): prompts on all of them, generation on half (`generation_threads`).
Its grammar is checked on a shortlist first (`_shortlist.py`): a constrained token costs
what it costs embedded, where the plain server checks the whole vocabulary on every token
(1.65 free tokens a constrained one on one thread). And it says so: its models are listed as
owned by `SERVER_OWNER`, and `/props` names the model file, as llama.cpp's own server does,
so that a client on this machine (`_openai.py`) weighs its constrained tokens at the
embedded cost and takes the path tipbench ships for the file (`collect/_known_paths.py`)
without a probe.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tipbench._errors import ConfigError
from tipbench.backends._base import LOOPBACK
from tipbench.backends._gguf import read_gguf_header
from tipbench.backends._threads import CpuSample, ThreadChoice, ThreadClaims, choose_threads

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import HTTPConnection

    from tipbench._asgi import Authenticate

#: The `owned_by` of the models `tipbench serve-model` lists.
SERVER_OWNER = "tipbench"


def model_server_app(
    model: Path, alias: str, n_ctx: int, api_key: str | None, host: str = "127.0.0.1"
) -> tuple[FastAPI, str]:
    """The server's ASGI app with `model` loaded under `alias` for `host`, and a line on the
    threads it runs on. Every route asks for `api_key` as a bearer token where one is given
    (before a body is read: `RequestGuard`, which also bounds bodies).

    Raises:
        ConfigError: `host` is beyond this machine and no `api_key` is given.
    """
    if api_key is None and host not in LOOPBACK:
        raise ConfigError(f"--host {host}: serving beyond this machine needs OPENAI_API_KEY set")
    from fastapi import Depends
    from llama_cpp.server import app as server
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    from tipbench._asgi import RequestGuard
    from tipbench.backends._aligned import BLOCK
    from tipbench.backends._llamacpp import plain_cpu_buffers
    from tipbench.backends._shortlist import shortlist_grammar

    claims = ThreadClaims()
    with claims.locked():
        threads = choose_threads(CpuSample.start(), claims)
        generation = generation_threads(threads)
        claims.claim(generation)
    settings = ModelSettings(
        model=str(model),
        model_alias=alias,
        n_ctx=n_ctx,
        n_batch=BLOCK,
        n_threads=generation,
        n_threads_batch=threads.threads,
        verbose=False,
    )
    load = LlamaProxy.load_llama_from_model_settings

    def load_shortlisted(settings: ModelSettings) -> Any:
        llm = load(settings)
        shortlist_grammar(llm)
        return llm

    # this process serves one model: every model its server loads is shortlisted
    LlamaProxy.load_llama_from_model_settings = staticmethod(load_shortlisted)  # type: ignore[method-assign]
    with plain_cpu_buffers():
        app: FastAPI = server.create_app(
            server_settings=ServerSettings(api_key=api_key), model_settings=[settings]
        )
    app.add_middleware(RequestGuard, authenticate=_bearer(api_key))
    app.router.routes[:] = [
        route for route in app.router.routes if getattr(route, "path", None) != "/v1/models"
    ]
    listed = {
        "id": alias,
        "object": "model",
        "created": int(model.stat().st_mtime),
        "owned_by": SERVER_OWNER,
        "meta": {"n_params": read_gguf_header(model).parameter_count},  # as llama-server's
    }

    @app.get("/v1/models", dependencies=[Depends(server.authenticate)])
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [listed]}

    @app.get("/props", dependencies=[Depends(server.authenticate)])
    def props() -> dict[str, Any]:
        return {
            "model_path": str(model),
            "model_alias": alias,
            "n_threads": generation,
            "n_threads_batch": threads.threads,
        }

    return app, f"{generation} generating of {threads.describe()}"


def _bearer(api_key: str | None) -> Authenticate:
    """`RequestGuard`'s check: the request carries `api_key` as its bearer token (any
    request passes where there is no key)."""
    expected = f"Bearer {api_key}".encode()

    async def authenticate(connection: HTTPConnection) -> bool:
        given = connection.headers.get("authorization", "").encode()
        return api_key is None or hmac.compare_digest(given, expected)

    return authenticate


def generation_threads(threads: ThreadChoice) -> int:
    """The threads a served model generates on, of the `threads` chosen for the machine: all
    of them where the variable set the count, else half (at least one), the rest left to
    the server's own work and the clients beside it. Prompts are evaluated on all of them.

    Measured 2026-11-29 on 2 idle cores, 12 of the peers' requests from a bare `openai`
    loop, 4 rounds each: one thread for generation and two for prompts 17.3-18.3 s, one
    and one 23.3-24.0 s, two and two 17.2-29.1 s (median 23.7; `bench/README.md`)."""
    return threads.threads if threads.source == "variable" else max(1, threads.threads // 2)
