"""`tipbench serve-model`: a GGUF model behind an OpenAI-compatible API, for `openai:` specs."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from tipbench._errors import ConfigError
from tipbench.cli import serving

#: The bundled model, served when `--model` names none.
_DEFAULT_MODEL = "smollm2-135m"


@click.command("serve-model")
@click.option(
    "--model",
    default=_DEFAULT_MODEL,
    show_default=True,
    help="A GGUF file, or the name of a bundled model.",
)
@click.option("--alias", default="smollm2", show_default=True, help="The model's name in the API.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="TCP port."
)
@click.option(
    "--n-ctx", type=click.IntRange(min=256), default=2048, show_default=True, help="Context size."
)
def serve_model_command(model: str, alias: str, host: str, port: int, n_ctx: int) -> None:
    """Serve a GGUF model at /v1 (OpenAI-compatible) as the embedded backend runs it.

    llama-cpp-python's server on the cores free at start (TIPBENCH_LLAMA_THREADS overrides),
    with the embedded backend's grammar checked on the likeliest tokens first, so that
    constrained answers cost about what they cost embedded. Collect through it with
    `--models openai:ALIAS` and OPENAI_BASE_URL at http://HOST:PORT/v1. With OPENAI_API_KEY
    set every route asks for it as a bearer token; a host other than loopback needs one.
    """
    try:
        import llama_cpp.server.app  # noqa: F401 (what the app is built on)
        import uvicorn
    except ImportError as exc:
        raise ConfigError(
            f"tipbench serve-model needs the 'model-server' extra ({exc.name} is missing): "
            "pip install 'tipbench[model-server]'"
        ) from None
    from tipbench.backends import model_server_app, resolve_model_path

    api_key = os.environ.get("OPENAI_API_KEY") or None
    path = resolve_model_path(model)
    app, threads = model_server_app(path, alias, n_ctx, api_key, host)
    click.echo(f"{alias} ({path.name}; threads: {threads}) at http://{host}:{port}/v1", err=True)
    serving()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info"))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(3)
