"""The session's clock for JupyterLab (the user's Jupyter server, in the Slurm job, as the user).

    GET  {base}dsportal/session/clock[?fresh=1]  {"end", "seconds_left", "warn_minutes", "save_minutes",
                                                  "save_now", "extend_hours", "job_id"}
    POST {base}dsportal/session/saved            {"saved": [paths], "failed": [paths]} -> the session log
    POST {base}dsportal/session/extend           asks the hub for more time (the hub decides; it runs Slurm)

All need the session's own Jupyter login.  The frontend is spawner/labext.
"""

from __future__ import annotations

import json
import os
import signal

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..contract import EXTEND_PATH
from .clock import WARNING_SIGNAL, SessionClock, saved_paths

SETTINGS_KEY = "dsportal_clock"
HUB_TIMEOUT = 60  # the hub runs Slurm commands for an extension


class _Base(APIHandler):
    @property
    def clock(self) -> SessionClock:
        return self.settings[SETTINGS_KEY]


class ClockHandler(_Base):
    @web.authenticated
    async def get(self):
        self.finish(json.dumps(await self.clock.answer(fresh=self.get_argument("fresh", "") == "1")))


class SavedHandler(_Base):
    @web.authenticated
    def post(self):
        try:
            saved, failed = saved_paths(self.get_json_body())
        except ValueError as e:
            raise web.HTTPError(400, str(e)) from None
        for path in saved:
            self.log.warning("dsportal: saved before the time limit: %s", path)
        for path in failed:
            self.log.error("dsportal: could NOT save before the time limit: %s", path)
        self.set_status(204)
        self.finish()


class ExtendHandler(_Base):
    @web.authenticated
    async def post(self):
        request = HTTPRequest(os.environ["JUPYTERHUB_API_URL"].rstrip("/") + EXTEND_PATH, method="POST", body="{}",
                              headers={"Authorization": f"token {os.environ['JUPYTERHUB_API_TOKEN']}",
                                       "Content-Type": "application/json"}, request_timeout=HUB_TIMEOUT)
        try:
            answer = await AsyncHTTPClient().fetch(request)
        except HTTPClientError as e:
            message = "The hub did not answer; try again in a minute."
            if e.response is not None and e.code != 599:
                try:
                    message = json.loads(e.response.body).get("message") or message
                except ValueError:
                    pass
            raise web.HTTPError(e.code if e.code != 599 else 503, message) from None
        await self.clock.end_time(fresh=True)
        self.finish(answer.body)


def load(serverapp, session: dict) -> None:
    """Install the clock's handlers and Slurm's warning signal (spawner/jupyter/handlers.py calls this)."""
    clock_spec = session.get("clock", {})
    clock = SessionClock(job_id=os.environ.get("SLURM_JOB_ID", ""), squeue=clock_spec.get("squeue", "squeue"),
                         warn_minutes=list(clock_spec.get("warn_minutes", [15, 5])),
                         save_minutes=int(clock_spec.get("save_minutes", 3)),
                         extend_hours=float(clock_spec.get("extend_hours") or 0))
    serverapp.web_app.settings[SETTINGS_KEY] = clock
    base = serverapp.web_app.settings["base_url"]
    prefix = url_path_join(base, "dsportal/session")
    serverapp.web_app.add_handlers(".*$", [
        (url_path_join(prefix, "clock"), ClockHandler),
        (url_path_join(prefix, "saved"), SavedHandler),
        (url_path_join(prefix, "extend"), ExtendHandler),
    ])
    if not clock.job_id:
        return  # not in a Slurm job (a test or a local run): no end, no warning

    def warned() -> None:
        clock.warning_arrived()
        serverapp.log.warning("dsportal: Slurm's warning: the time limit is %s min away or less; "
                              "JupyterLab now saves every open document with unsaved changes", clock.save_minutes)

    signal.signal(WARNING_SIGNAL, lambda signum, frame: IOLoop.current().add_callback_from_signal(warned))
