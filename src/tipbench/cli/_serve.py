"""`tipbench serve`: the admin API, job runner and web pages under uvicorn."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from tipbench._errors import ConfigError
from tipbench.cli import serving


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="TCP port."
)
def serve_command(host: str, port: int) -> None:
    """Serve the admin API and web panel, and run the pipeline jobs it starts.

    Every route needs an admin token: set TIPBENCH_ADMIN_TOKEN (comma-separated for several)
    or TIPBENCH_ADMIN_TOKEN_FILE. Jobs, their logs and the default MLflow store live in
    $TIPBENCH_HOME; MLFLOW_TRACKING_URI points the server at another store.
    """
    try:
        import uvicorn

        from tipbench.admin import ServerSettings, create_app, redact_access_log
    except ImportError as exc:
        raise ConfigError(
            f"tipbench serve needs the 'serve' extra ({exc.name} is missing): "
            "pip install 'tipbench[serve]'"
        ) from None
    os.umask(0o077)  # what the server and its jobs write (jobs, logs, store) is private
    app = create_app(ServerSettings())  # refuses to start without an admin token
    config = uvicorn.Config(app, host=host, port=port, log_level="info", workers=1)
    redact_access_log()  # after uvicorn.Config, which sets up the loggers
    click.echo(f"tipbench admin on http://{host}:{port} (API schema at /openapi.json)", err=True)
    serving()
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the signal it stopped on
        server.run()
    if not server.started:  # as uvicorn.run: the app or the socket failed to start
        sys.exit(3)
