"""A start the portal refuses (bad options, a refused account, an old job still stopping), and its one log line.

JupyterHub logs a refused start up to three times as an ERROR, twice with a
traceback ("Exception applying user_options", "Not starting ...'s server",
"Failed to spawn single-user server with form", "Error starting server"): it cannot tell a user's
mistake from a fault.  The spawner logs each refusal once as a WARNING
before raising it; a log filter drops JupyterHub's ERROR records made while
that refusal is being handled, and nothing else (it reads JupyterHub's
records: spawner/hub/base/upstream_jupyterhub.py, QuietRefusals).
"""

from __future__ import annotations

import logging

from jupyterhub.spawner import SpawnException
from tornado.log import app_log, gen_log

from ..base.upstream_jupyterhub import QuietRefusals


class SessionRefused(SpawnException):
    """What the user reads (page or API), with the HTTP status; never a fault of the hub."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message, reason="invalid_options", status_code=status)
        self.jupyterhub_message = message


_FILTER = QuietRefusals(SessionRefused)


def quiet_refusals(hub_log: logging.Logger) -> None:
    """Install the filter on the hub's logger and tornado's (JupyterHub logs through all three); idempotent."""
    for log in (hub_log, app_log, gen_log):
        log.addFilter(_FILTER)
