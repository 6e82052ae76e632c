"""The admin server: the API, the job runner and the web pages of `tipbench serve`."""

from tipbench.server._app import create_app
from tipbench.server._settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
