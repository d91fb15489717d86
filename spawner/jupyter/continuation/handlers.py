"""A session's continuation, served by its Jupyter server (in the Slurm job, as the owner).

    POST {base}dsportal/continuation/carry   every notebook's kernel writes its variables -> {"notebooks": {path:
                                             {"carried": N, "not": {name: why}, "refused"?: why}}}
    GET  {base}dsportal/continuation         {"continued_from": JOB, "restored": {...}, "waiting": [paths],
                                             "terminals": [names reopened]}

Both need the session's own Jupyter login (the hub's continue API calls the first with the session's token,
spawner/hub/continuation/service.py).  The carried files are the owner's own, in a folder of theirs (0700): a
guest, whose code runs as the owner anyway, gains nothing here that the owner's kernel did not already give.
"""

from __future__ import annotations

import asyncio
import json
import os

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ...contract import CONTINUATION_CARRY_PATH
from ...sessionspec import ContinuationSpec
from .session import Continuation, prepare

SETTINGS_KEY = "dsportal_continuation"


class _Base(APIHandler):
    @property
    def continuation(self) -> Continuation:
        return self.settings[SETTINGS_KEY]


class CarryHandler(_Base):
    @web.authenticated
    async def post(self):
        if not self.continuation.spec.enabled:
            raise web.HTTPError(403, "The admin has not enabled continuing sessions here.")
        app = self.settings["serverapp"]
        sessions = await app.session_manager.list_sessions()
        try:
            notebooks = await self.continuation.carry(
                app.kernel_manager, sessions, self.settings.get("terminal_manager")
            )
        except OSError as e:  # ~/.dsportal/continuation is a link or another account's: nothing is written there
            raise web.HTTPError(409, f"Nothing was carried: {e}.") from None
        self.finish(json.dumps({"notebooks": notebooks}))


class ContinuationHandler(_Base):
    @web.authenticated
    def get(self):
        self.finish(json.dumps(self.continuation.answer()))


def load(serverapp, spec: ContinuationSpec) -> Continuation:
    """Install the handlers; in a session that continues another, start giving its notebooks their variables back
    (spawner/jupyter/extension.py calls this)."""
    continuation = prepare(spec, os.environ.get("SLURM_JOB_ID", ""))
    serverapp.web_app.settings[SETTINGS_KEY] = continuation
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "dsportal/continuation"), ContinuationHandler),
            (url_path_join(base, CONTINUATION_CARRY_PATH), CarryHandler),
        ],
    )
    if continuation.manifest or continuation.terminals:

        def start() -> None:  # once every extension is loaded (the terminals' among them)
            continuation.reopen_terminals(serverapp.web_app.settings.get("terminal_manager"), os.path.expanduser("~"))
            # held by the settings: the event loop keeps weak references to tasks only
            serverapp.web_app.settings[SETTINGS_KEY + "_task"] = asyncio.ensure_future(
                continuation.restore_loop(serverapp.kernel_manager, serverapp.session_manager.list_sessions)
            )

        IOLoop.current().add_callback(start)
    return continuation
