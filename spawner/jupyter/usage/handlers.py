"""What the session used so far, in its Jupyter server (in the Slurm job, as the user).

    GET  {base}dsportal/session/usage            what the session used so far, in words (spawner/usage.py)

The sampler (sampler.py) reads the job's processes and GPUs and reports to the hub; it needs the session's own
Jupyter login.  The frontend is spawner/labext.
"""

from __future__ import annotations

import asyncio
import json
import os

import psutil
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ...sessionspec import UsageSpec
from ..session.activity import SessionActivity
from .sampler import UsageSampler, job_allocation, process_use, report_to_hub

USAGE_KEY = "dsportal_usage"


class UsageHandler(APIHandler):
    @web.authenticated
    def get(self):
        self.finish(json.dumps(self.settings[USAGE_KEY].summary()))


def load(serverapp, usage: UsageSpec, activity: SessionActivity) -> UsageSampler:
    """Install the handler; in a Slurm job, sample and report (spawner/jupyter/extension.py calls this)."""
    sampler = UsageSampler(
        activity.gpus, lambda: process_use(psutil.Process()), job_allocation(os.environ), report_to_hub
    )
    serverapp.web_app.settings[USAGE_KEY] = sampler
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, "dsportal/session/usage"), UsageHandler)])
    if os.environ.get("SLURM_JOB_ID"):  # not in a job (a test or a local run): nothing to report
        IOLoop.current().add_callback(
            lambda: asyncio.ensure_future(sampler.run(usage.sample_seconds, usage.report_seconds))
        )
    return sampler
