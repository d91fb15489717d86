"""The portal's Jupyter server extension: each concept's handlers, installed in the session's Jupyter server.

Each concept's folder installs its own (`load` in its handlers.py): the session's readiness, use and GPUs
(session/), TensorBoard (tensorboard/), the apps (apps/), the clock (clock/), what the session used (usage/), runs
(runs/) and the new token a share's end hands the session (sharing/handover.py).  Every handler requires the session's own Jupyter login, but
the hub's readiness check.
"""

from __future__ import annotations

import os

from ..sessionspec import SessionSpec
from .apps import handlers as apps
from .clock import handlers as clock
from .continuation import handlers as continuation
from .runs import handlers as runs
from .session import handlers as session
from .sharing import handover
from .tensorboard import handlers as tensorboard
from .usage import handlers as usage


def _jupyter_server_extension_points():
    return [{"module": "spawner.jupyter.extension"}]


def _load_jupyter_server_extension(serverapp):
    # what the admin set; under dsportal-singleuser its start (spawner/job/session/start.py) has already read it
    spec = SessionSpec.from_environ(os.environ)
    activity = session.load(serverapp, spec.idle)
    prefix = tensorboard.load(serverapp, spec)
    running_apps = apps.load(serverapp, spec.apps)
    clock.load(serverapp, spec.clock)
    usage.load(serverapp, spec.usage, activity)
    runs.load(serverapp)
    continuation.load(serverapp, spec.continuation)  # carried out for the next session, or taken back
    handover.load(serverapp)  # the hub hands the session a new token when a share ends
    serverapp.log.info(
        "DS Portal extension loaded: TensorBoard at %s, apps (%s), the session's clock, the jobs panel",
        prefix,
        ", ".join(running_apps.offered) or "none",
    )


def _unload_jupyter_server_extension(serverapp):
    """Jupyter Server's hook at its end: the apps' process groups are stopped with it."""
    running_apps = serverapp.web_app.settings.get(apps.SETTINGS_KEY)
    if running_apps is not None:
        running_apps.stop_all_now()
