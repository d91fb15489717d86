"""Where the session's server goes past Jupyter Server's public hooks: each place, why, what it relies on.

Runs in the session's Jupyter server (in the Slurm job, as the user).
Checked against jupyter_server 2.21.1 (pyproject.toml pins
jupyter-server>=2.4,<3 for this module); tests/unit/test_upstream_jupyter_server.py
fails when Jupyter Server changes what a place below relies on.

- `ServerApp._find_http_port` and `ServerApp._bind_http_server_tcp`, replaced
  on the one server of the session (`serve_on_sockets`): Jupyter Server picks a
  port by binding a socket, closing it and binding again later, and offers no
  way to serve on sockets bound before it started; between its two binds
  another account on a shared node could take the port
  (spawner/jupyter/singleuser.py says why that matters).
- `ServerWebApplication.last_activity`, a public method, replaced on the
  server's application (`report_activity_by`), and its body copied without
  some of its sources (`last_activity_without`): JupyterHub's single-user
  server reports what it returns to the hub, and Jupyter Server counts every
  API request (an open tab's polling) as activity; its public hook, settings
  whose names end in `_last_activity`, can add sources but not leave one out
  (spawner/jupyter/session/activity.py).
- `AsyncFileContentsManager._dir_model`, overridden on the session's contents
  manager (`SessionContentsManager`, ServerApp.contents_manager_class): it lists
  a folder by reading its names, then asking its own `get()` about each, and a
  file that goes in between (SQLite's `mlflow.db-journal` while MLflow logs a
  metric, a framework's temporary checkpoint) makes that `get()` raise a 404,
  answered for the whole folder: JupyterLab's file browser says "Directory not
  found" and goes back to the home folder while a notebook there trains.  The
  listing's own `lstat` skips a name that is gone; its `get()` does not, so the
  listing is read again (up to LISTING_TRIES times) when the folder is still there.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Collection
from datetime import datetime

from tornado import web

LISTING_TRIES = 5  # a folder whose files come and go faster than it is read still fails after these, as before


def serve_on_sockets(serverapp, sockets: list[socket.socket], listening: Callable[[], None]) -> None:
    """Make `serverapp` (a ServerApp not started yet) serve on `sockets`, bound already, on their port;
    `listening()` once it does."""

    def find_http_port() -> None:
        serverapp.port = sockets[0].getsockname()[1]

    def bind_http_server_tcp() -> bool:
        serverapp.http_server.add_sockets(sockets)
        listening()
        return True

    serverapp._find_http_port = find_http_port
    serverapp._bind_http_server_tcp = bind_http_server_tcp


def report_activity_by(serverapp, last_activity: Callable[[], datetime]) -> None:
    """What `serverapp` reports as its last activity (to the hub, and at /api/status) is `last_activity()`."""
    serverapp.web_app.last_activity = last_activity


def last_activity_without(settings: dict, ignored: Collection[str]) -> datetime:
    """Jupyter Server's `last_activity()` of the application whose settings these are, without the
    `*_last_activity` settings named in `ignored` (pure)."""
    sources = [settings["started"], settings["kernel_manager"].last_kernel_activity]
    sources += [value for name, value in settings.items() if name.endswith("_last_activity") and name not in ignored]
    sources += list(settings.get("last_activity_times", {}).values())
    return max(s for s in sources if s is not None)


def _contents_manager() -> type:
    """Made at its first use, when Jupyter Server loads it by name: its base class imports nbformat's validator
    (1.9 s of a session's start here), which the port keeper, importing this module before the session's
    preparation, must not wait for."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    class SessionContentsManager(AsyncLargeFileManager):
        """Jupyter Server's default contents manager, whose folder listing is read again when a file went meanwhile."""

        async def _dir_model(self, path, content=True):
            for attempt in range(1, LISTING_TRIES + 1):
                try:
                    return await super()._dir_model(path, content=content)
                except web.HTTPError as e:
                    # the folder itself gone, or not a listing: that 404 is the answer
                    if e.status_code != 404 or not content or attempt == LISTING_TRIES:
                        raise
                    if not os.path.isdir(self._get_os_path(path)):
                        raise
                    self.log.debug("dsportal: a file of %r went while it was listed; listing it again", path)

    SessionContentsManager.__qualname__ = "SessionContentsManager"
    return SessionContentsManager


def __getattr__(name: str):
    """`SessionContentsManager` (PEP 562): the class Jupyter Server is told to load by name (server_args)."""
    if name == "SessionContentsManager":
        globals()[name] = cls = _contents_manager()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
