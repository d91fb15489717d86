"""A start the portal refuses (bad options, a refused account, an old job still stopping), and its one log line.

JupyterHub logs a refused start up to three times as an ERROR, twice with a
traceback ("Exception applying user_options", "Not starting ...'s server",
"Failed to spawn single-user server with form", "Error starting server"): it cannot tell a user's
mistake from a fault.  The spawner logs each refusal once as a WARNING
before raising it; `QuietRefusals` drops JupyterHub's ERROR records made while
that refusal is being handled, and nothing else.
"""

from __future__ import annotations

import logging
import sys

from jupyterhub.spawner import SpawnException
from tornado.log import app_log, gen_log


class SessionRefused(SpawnException):
    """What the user reads (page or API), with the HTTP status; never a fault of the hub."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message, reason="invalid_options", status_code=status)
        self.jupyterhub_message = message


class QuietRefusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # JupyterHub logs from inside its `except` blocks, with or without exc_info: either names the refusal
        if record.levelno < logging.ERROR:
            return True
        handled = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        # the spawn page logs a finished start's exception outside any `except`, by its text (the class's name)
        return not (isinstance(handled, SessionRefused) or f"{SessionRefused.__name__}(" in record.getMessage())


_FILTER = QuietRefusals()


def quiet_refusals(hub_log: logging.Logger) -> None:
    """Install the filter on the hub's logger and tornado's (JupyterHub logs through all three); idempotent."""
    for log in (hub_log, app_log, gen_log):
        log.addFilter(_FILTER)
