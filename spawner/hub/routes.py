"""The hub's routes for the portal, installed in one place (hub side).

Each API module declares its handlers (`HANDLERS`, `REPLACED`) and changes
nothing when imported; `install` puts them into JupyterHub's API handler
list once, from the hub's config (spawner/hub/hubconfig.py), before
JupyterHub builds its application from that list.  Not
`c.JupyterHub.extra_handlers`: JupyterHub deprecates it (with a warning in
the log) and adds its handlers after its own, so it could not serve the
stop API in place of JupyterHub's.
"""

from __future__ import annotations

from jupyterhub import apihandlers

from . import clusterapi, portapi, sessionapi, shareapi, stopapi
from .runs import api as runsapi
from .usage import pages as usagepages
from .usage import reportapi as usagereport

ADDED = (
    *portapi.HANDLERS,
    *sessionapi.HANDLERS,
    *clusterapi.HANDLERS,
    *runsapi.HANDLERS,
    *shareapi.HANDLERS,
    *usagereport.HANDLERS,
    *usagepages.handlers(),  # pages, not API: JupyterHub prefixes this list with /hub as its own
)
REPLACED = {**stopapi.REPLACED, **shareapi.REPLACED}  # JupyterHub's handler -> the portal's
# batchspawner's port callback: its import adds it to JupyterHub's list (spawner/hub/portapi.py)
REMOVED = (portapi.REPLACED_CALLBACK,)


def installed(handlers: list[tuple]) -> list[tuple]:
    """`handlers` with the portal's added, JupyterHub's replaced and batchspawner's removed (pure)."""
    kept = [route for route in handlers if route[1] not in REMOVED]
    replaced = [(url, REPLACED.get(handler, handler), *rest) for url, handler, *rest in kept]
    return replaced + [route for route in ADDED if route not in replaced]


def install() -> None:
    """Serve the portal's API with JupyterHub's: in the list JupyterHub builds its application from (idempotent)."""
    apihandlers.default_handlers[:] = installed(apihandlers.default_handlers)
