"""One of the portal's idle cullers: jupyterhub-idle-culler, passing over the sessions of other timeouts.

Run by the hub as a JupyterHub-managed service (spawner/hub/session/idle.py):
`python -m spawner.hub.session.culler --timeout=60 --partitions=debug
--default-partition=sxm2` and the library's other options.  A user whose
sessions have different idle timeouts is in the JupyterHub group of each, so
a culler lists sessions that another culler owns; the library would stop one
idle past its own, shorter timeout, and the hub refuses it (403, a traceback
in the log every pass).  The library's cull_arbiter_hook decides instead:
a session is this culler's when its partition is one of `partitions`.
"""

from __future__ import annotations

import json
import logging

from jupyterhub_idle_culler import IdleCuller, default_cull_arbiter
from tornado.httpclient import HTTPClientError
from traitlets import List, Unicode, default

from .idle import session_partition


class BusyStopIsAWarning(logging.Filter):
    """The hub answers a stop 409 while a start request checks the same session (spawner/hub/session/handlers.py);
    the library logs any failed stop as an error with a traceback ("Error processing NAME").  This one is no
    error: the session still runs and the next pass stops it.  Said in one warning line with the hub's words."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HTTPClientError) and error.code == 409:
            record.msg, record.args = (
                "%s: the hub answered 409 (%s); the next pass tries again",
                (
                    record.getMessage(),
                    hub_words(error),
                ),
            )
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
            record.exc_info = record.exc_text = None
        return True


class NoTokenInCallbackErrors(logging.Filter):
    """Tornado logs a failed periodic callback as "Exception in callback %r": the library's callback is a
    functools.partial holding the culler's API token, which was written into the hub's log (seen when the hub
    stopped under a pass: Connection refused).  Its words name the pass, never the partial; a hub that does not
    answer (it is stopping or restarting) is one warning line, as the next pass tries again."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Exception in callback"):
            error = record.exc_info[1] if record.exc_info else None
            if isinstance(error, OSError):
                record.msg, record.args = (
                    "The hub did not answer the culling pass (%s); the next pass tries again",
                    (error,),
                )
                record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
                record.exc_info = record.exc_text = None
            else:
                record.msg, record.args = "The culling pass failed", ()
        return True


def hub_words(error: HTTPClientError) -> str:
    """The message of the hub's JSON answer, or the HTTP reason (pure but for reading the answer's body)."""
    try:
        return str(json.loads(error.response.body)["message"])[:300]
    except (AttributeError, TypeError, ValueError, KeyError):
        return str(error)


class PortalIdleCuller(IdleCuller):
    """jupyterhub-idle-culler that culls only the sessions of its partitions."""

    partitions = List(
        Unicode(),
        help="The partitions whose sessions have this culler's timeout (the others are another culler's).",
    ).tag(config=True)
    default_partition = Unicode(
        help="The partition of a session whose options name none (the admin config's default)."
    ).tag(config=True)

    aliases = {
        **IdleCuller.aliases,
        "partitions": "PortalIdleCuller.partitions",
        "default-partition": "PortalIdleCuller.default_partition",
    }

    def initialize(self, argv=None):
        super().initialize(argv)
        self.log.addFilter(BusyStopIsAWarning())
        logging.getLogger("tornado.application").addFilter(NoTokenInCallbackErrors())  # the pass's own errors

    @default("cull_arbiter_hook")
    def _own_sessions_only(self):
        def arbiter(*, inactive, inactive_limit, server, **kwargs):
            if session_partition(server.get("user_options"), self.default_partition) not in self.partitions:
                return False  # another culler's session
            return default_cull_arbiter(inactive=inactive, inactive_limit=inactive_limit, server=server, **kwargs)

        return arbiter


if __name__ == "__main__":
    PortalIdleCuller.launch_instance()
