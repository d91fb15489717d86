"""The session's clock for JupyterLab (the user's Jupyter server, in the Slurm job, as the user).

    GET  {base}dsportal/session/clock[?fresh=1]  {"end", "seconds_left", "warn_minutes", "save_minutes",
                                                  "save_now", "extend_hours", "job_id",
                                                  "idle_seconds", "idle_timeout", "idle_warning",
                                                  "continuable"}
    POST {base}dsportal/session/saved            {"saved": [paths], "failed": [paths]} -> the session log
    POST {base}dsportal/session/extend           asks the hub for more time (the hub decides; it runs Slurm)

All need the session's own Jupyter login.  The frontend is spawner/labext.  The idle part of the clock's answer
is the session's use (spawner/jupyter/session/handlers.py, which serves its activity and GPUs).
"""

from __future__ import annotations

import json
import os
import signal

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ...contract import EXTEND_PATH
from ...sessionspec import ClockSpec
from ..continuation.handlers import SETTINGS_KEY as CONTINUATION_KEY
from ..session.handlers import activity_of
from ..session.hubcall import ask_hub
from .clock import WARNING_SIGNAL, SessionClock, held_warning, saved_paths

SETTINGS_KEY = "dsportal_clock"


class _Base(APIHandler):
    @property
    def clock(self) -> SessionClock:
        return self.settings[SETTINGS_KEY]


class ClockHandler(_Base):
    @web.authenticated
    async def get(self):
        answer = await self.clock.answer(fresh=self.get_argument("fresh", "") == "1")
        continuation = self.settings.get(CONTINUATION_KEY)  # the home page can continue it in a new job
        continuable = bool(continuation is not None and continuation.spec.enabled)
        self.finish(json.dumps({**answer, **activity_of(self.settings).answer(), "continuable": continuable}))


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
        _, body = await ask_hub("POST", EXTEND_PATH)
        await self.clock.end_time(fresh=True)
        self.finish(body)


def load(serverapp, clock_spec: ClockSpec) -> None:
    """Install the clock's handlers and Slurm's warning signal (spawner/jupyter/extension.py calls this)."""
    clock = SessionClock(
        job_id=os.environ.get("SLURM_JOB_ID", ""),
        squeue=clock_spec.squeue,
        warn_minutes=list(clock_spec.warn_minutes),
        save_minutes=clock_spec.save_minutes,
        extend_hours=clock_spec.extend_hours,
    )
    serverapp.web_app.settings[SETTINGS_KEY] = clock
    base = serverapp.web_app.settings["base_url"]
    prefix = url_path_join(base, "dsportal/session")
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(prefix, "clock"), ClockHandler),
            (url_path_join(prefix, "saved"), SavedHandler),
            (url_path_join(prefix, "extend"), ExtendHandler),
        ],
    )
    if not clock.job_id:
        return  # not in a Slurm job (a test or a local run): no end, no warning

    def warned() -> None:
        clock.warning_arrived()
        serverapp.log.warning(
            "dsportal: Slurm's warning: the time limit is %s min away or less; "
            "JupyterLab now saves every open document with unsaved changes",
            clock.save_minutes,
        )

    signal.signal(WARNING_SIGNAL, lambda signum, frame: IOLoop.current().add_callback_from_signal(warned))
    if held_warning() is not None:  # it came while JupyterLab was loading (spawner/jupyter/clock/clock.py)
        serverapp.log.warning("dsportal: Slurm's warning came while the session was starting; taken now")
        IOLoop.current().add_callback(warned)
