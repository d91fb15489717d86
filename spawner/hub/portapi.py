"""The port callback: a starting session tells the hub which port JupyterLab took.

Replaces batchspawner's `/hub/api/batchspawner` handler, which sets any
attribute the caller names on the spawner.  This one accepts exactly
``{"port": <int>}``, only from the token of the session that is starting,
only while it starts, and once per start.  Importing this module also removes batchspawner's
handler from JupyterHub's handler list, so it is never served.
"""

from __future__ import annotations

import hmac
import json

import batchspawner.api  # noqa: F401  (imported first so its handler can be removed below)
from jupyterhub.apihandlers import APIHandler, default_handlers
from jupyterhub.utils import safe_log
from tornado import web

from ..contract import PORT_CALLBACK

PORT_URL = "/api" + PORT_CALLBACK  # under the hub's /hub prefix
PORT_RANGE = (1024, 65535)


def parse_port_body(body: object) -> int:
    """The request body -> the port; ValueError with the reason otherwise."""
    if not isinstance(body, dict) or set(body) != {"port"}:
        keys = sorted(map(str, body)) if isinstance(body, dict) else type(body).__name__
        raise ValueError(f'only {{"port": <integer>}} is accepted, got {safe_log(keys, 200)}')
    port = body["port"]
    low, high = PORT_RANGE
    if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= high:
        raise ValueError(f"port must be an integer from {low} to {high}, got {safe_log(port, 50)}")
    return port


class PortHandler(APIHandler):
    @web.authenticated
    def post(self):
        user = self.current_user
        token = self.get_auth_token() or ""
        spawner = next(
            (s for s in getattr(user, "spawners", {}).values()
             if s.api_token and hmac.compare_digest(s.api_token, token)),
            None,
        )
        if spawner is None or spawner.pending != "spawn":
            self.log.warning("Port callback refused for %s: not the token of a starting session", user.name)
            raise web.HTTPError(400, "This token does not belong to a session that is starting")
        try:
            body = json.loads(self.request.body or b"null")
            port = parse_port_body(body)
        except ValueError as e:  # json.JSONDecodeError is a ValueError too
            self.log.warning("Port callback refused for %s: %s", spawner._log_name, e)
            raise web.HTTPError(400, "Invalid port callback: %s", str(e)) from None
        if spawner.port:
            # One report per start: the hub proves and routes the port it was told first.  A second report
            # (a session switching ports during the readiness check) would route to an unproven listener.
            self.log.warning("Port callback refused for %s: port %d was already reported (this one: %d)",
                             spawner._log_name, spawner.port, port)
            raise web.HTTPError(409, "This session has reported its port already")
        spawner.port = port
        self.log.info("Session of %s reported port %d", spawner._log_name, port)
        self.set_status(201)
        self.finish(json.dumps({"port": port}))


# Never serve batchspawner's handler; serve ours.
default_handlers[:] = [h for h in default_handlers if h[0] != r"/api/batchspawner"]
if (PORT_URL, PortHandler) not in default_handlers:
    default_handlers.append((PORT_URL, PortHandler))
