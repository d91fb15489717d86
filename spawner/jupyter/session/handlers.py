"""The session's own API in its Jupyter server (in the Slurm job, as the user): readiness, use and its GPUs.

    GET  {base}dsportal/ready?nonce=N           the hub's readiness check: proof that this server holds the token
    POST {base}dsportal/session/activity         the user's mouse or keys in JupyterLab: use (activity.py)
    GET  {base}dsportal/session/gpus             {"gpus": [NVML readings of the job's GPUs], "note"}

But the readiness check, all need the session's own Jupyter login.  The frontend is spawner/labext.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ...contract import READY_PATH, readiness_proof
from ...sessionspec import IdleSpec
from . import token as sessiontoken
from .activity import GpuWatch, SessionActivity
from .gpus import NoGpuReadings, load_nvml, visible
from .upstream_jupyter_server import report_activity_by

ACTIVITY_KEY = "dsportal_activity"


def activity_of(settings: dict) -> SessionActivity:
    """The session's use, as start_activity put it in the server's settings (the clock and usage read it)."""
    return settings[ACTIVITY_KEY]


class ReadyHandler(JupyterHandler):
    """The hub's readiness check: this server proves it is the session's (it alone holds the token)."""

    @allow_unauthenticated
    def get(self):
        nonce = self.get_argument("nonce", "")
        if not re.fullmatch(r"[0-9a-f]{16,64}", nonce):
            raise web.HTTPError(400, "nonce must be 16 to 64 hex digits")
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"proof": readiness_proof(sessiontoken.current(), nonce)}))


class ActivityHandler(APIHandler):
    @web.authenticated
    def post(self):
        activity_of(self.settings).mark()
        self.set_status(204)
        self.finish()


class GpusHandler(APIHandler):
    @web.authenticated
    async def get(self):
        gpus = activity_of(self.settings).gpus
        await asyncio.get_running_loop().run_in_executor(None, gpus.read)
        self.finish(json.dumps(gpus.to_dict()))


def load(serverapp, idle: IdleSpec) -> SessionActivity:
    """Install the session's handlers and start watching its use (spawner/jupyter/extension.py calls this)."""
    activity = start_activity(serverapp, idle)
    base = serverapp.web_app.settings["base_url"]
    prefix = url_path_join(base, "dsportal/session")
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, READY_PATH), ReadyHandler),
            (url_path_join(prefix, "activity"), ActivityHandler),
            (url_path_join(prefix, "gpus"), GpusHandler),
        ],
    )
    return activity


def start_activity(serverapp, idle: IdleSpec) -> SessionActivity:
    """What counts as use (spawner/jupyter/session/activity.py) replaces Jupyter Server's own last_activity()."""
    try:
        nvml, note = load_nvml(), ""
    except NoGpuReadings as e:
        nvml, note = None, str(e)
    devices = visible(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if devices is None and os.environ.get("SLURM_JOB_ID"):
        devices = []  # a Slurm job without the variable has no GPU: the node's GPUs are other users'
    # a job on shards of a GPU (Slurm sets SLURM_SHARDS_ON_NODE): the GPU's neighbours' work is not this session's
    gpus = GpuWatch(nvml, devices, note=note, shared=bool(os.environ.get("SLURM_SHARDS_ON_NODE")))
    interval = int(os.environ.get("JUPYTERHUB_ACTIVITY_INTERVAL") or 300)
    activity = SessionActivity(
        serverapp.web_app.settings, gpus, check_seconds=max(5.0, interval / 2), idle=dataclasses.asdict(idle)
    )
    serverapp.web_app.settings[ACTIVITY_KEY] = activity
    # the single-user server reports this to the hub; Jupyter Server's /api/status shows it too
    report_activity_by(serverapp, activity.last_activity)
    IOLoop.current().add_callback(lambda: asyncio.ensure_future(activity.run()))
    return activity
