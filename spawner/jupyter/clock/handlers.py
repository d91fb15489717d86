"""The session's clock for JupyterLab (the user's Jupyter server, in the Slurm job, as the user).

    GET  {base}dsportal/session/clock[?fresh=1]  {"end", "seconds_left", "warn_minutes", "save_minutes",
                                                  "save_now", "extend_hours", "job_id",
                                                  "idle_seconds", "idle_timeout", "idle_warning"}
    POST {base}dsportal/session/activity         the user's mouse or keys in JupyterLab: use (activity.py)
    GET  {base}dsportal/session/gpus             {"gpus": [NVML readings of the job's GPUs], "note"}
    GET  {base}dsportal/session/usage            what the session used so far, in words (spawner/usage.py)
    POST {base}dsportal/session/saved            {"saved": [paths], "failed": [paths]} -> the session log
    POST {base}dsportal/session/extend           asks the hub for more time (the hub decides; it runs Slurm)

All need the session's own Jupyter login.  The frontend is spawner/labext.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal

import psutil
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ...contract import EXTEND_PATH
from ...sessionspec import ClockSpec, IdleSpec, UsageSpec
from ..session.activity import GpuWatch, SessionActivity
from ..session.gpus import NoGpuReadings, load_nvml, visible
from ..session.hubcall import ask_hub
from ..session.upstream_jupyter_server import report_activity_by
from ..usage.sampler import UsageSampler, job_allocation, process_use, report_to_hub
from .clock import WARNING_SIGNAL, SessionClock, held_warning, saved_paths

SETTINGS_KEY = "dsportal_clock"
ACTIVITY_KEY = "dsportal_activity"
USAGE_KEY = "dsportal_usage"


class _Base(APIHandler):
    @property
    def clock(self) -> SessionClock:
        return self.settings[SETTINGS_KEY]

    @property
    def activity(self) -> SessionActivity:
        return self.settings[ACTIVITY_KEY]


class ClockHandler(_Base):
    @web.authenticated
    async def get(self):
        answer = await self.clock.answer(fresh=self.get_argument("fresh", "") == "1")
        self.finish(json.dumps({**answer, **self.activity.answer()}))


class ActivityHandler(_Base):
    @web.authenticated
    def post(self):
        self.activity.mark()
        self.set_status(204)
        self.finish()


class GpusHandler(_Base):
    @web.authenticated
    async def get(self):
        await asyncio.get_running_loop().run_in_executor(None, self.activity.gpus.read)
        self.finish(json.dumps(self.activity.gpus.to_dict()))


class UsageHandler(_Base):
    @web.authenticated
    def get(self):
        self.finish(json.dumps(self.settings[USAGE_KEY].summary()))


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


def load(serverapp, clock_spec: ClockSpec, idle: IdleSpec, usage: UsageSpec) -> None:
    """Install the clock's handlers and Slurm's warning signal (spawner/jupyter/extension.py calls this)."""
    clock = SessionClock(
        job_id=os.environ.get("SLURM_JOB_ID", ""),
        squeue=clock_spec.squeue,
        warn_minutes=list(clock_spec.warn_minutes),
        save_minutes=clock_spec.save_minutes,
        extend_hours=clock_spec.extend_hours,
    )
    serverapp.web_app.settings[SETTINGS_KEY] = clock
    activity = start_activity(serverapp, idle)
    sampler = UsageSampler(
        activity.gpus, lambda: process_use(psutil.Process()), job_allocation(os.environ), report_to_hub
    )
    serverapp.web_app.settings[USAGE_KEY] = sampler
    base = serverapp.web_app.settings["base_url"]
    prefix = url_path_join(base, "dsportal/session")
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(prefix, "clock"), ClockHandler),
            (url_path_join(prefix, "saved"), SavedHandler),
            (url_path_join(prefix, "extend"), ExtendHandler),
            (url_path_join(prefix, "activity"), ActivityHandler),
            (url_path_join(prefix, "gpus"), GpusHandler),
            (url_path_join(prefix, "usage"), UsageHandler),
        ],
    )
    if not clock.job_id:
        return  # not in a Slurm job (a test or a local run): no end, no warning, no report
    IOLoop.current().add_callback(
        lambda: asyncio.ensure_future(sampler.run(usage.sample_seconds, usage.report_seconds))
    )

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


def start_activity(serverapp, idle: IdleSpec) -> SessionActivity:
    """What counts as use (spawner/jupyter/session/activity.py) replaces Jupyter Server's own last_activity()."""
    try:
        nvml, note = load_nvml(), ""
    except NoGpuReadings as e:
        nvml, note = None, str(e)
    devices = visible(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if devices is None and os.environ.get("SLURM_JOB_ID"):
        devices = []  # a Slurm job without the variable has no GPU: the node's GPUs are other users'
    gpus = GpuWatch(nvml, devices, note=note)
    interval = int(os.environ.get("JUPYTERHUB_ACTIVITY_INTERVAL") or 300)
    activity = SessionActivity(
        serverapp.web_app.settings, gpus, check_seconds=max(5.0, interval / 2), idle=dataclasses.asdict(idle)
    )
    serverapp.web_app.settings[ACTIVITY_KEY] = activity
    # the single-user server reports this to the hub; Jupyter Server's /api/status shows it too
    report_activity_by(serverapp, activity.last_activity)
    IOLoop.current().add_callback(lambda: asyncio.ensure_future(activity.run()))
    return activity
