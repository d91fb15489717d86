"""The hub's routes for the portal, installed in one place (hub side).

Each concept's handlers module (spawner/hub/CONCEPT/handlers.py) declares its
handlers (`HANDLERS`, `REPLACED`) and changes nothing when imported; `install` puts them into JupyterHub's API handler
list once, from the hub's config (spawner/hub/wiring/hubconfig.py), before
JupyterHub builds its application from that list (a list JupyterHub offers
no hook for: spawner/hub/base/upstream_jupyterhub.py changes it).  Not
`c.JupyterHub.extra_handlers`: JupyterHub deprecates it (with a warning in
the log) and adds its handlers after its own, so it could not serve the
stop API in place of JupyterHub's.
"""

from __future__ import annotations

from ..apps import handlers as apps
from ..base.upstream_jupyterhub import change_api_handlers
from ..clock import handlers as clock
from ..continuation import handlers as continuation
from ..home import handlers as home
from ..receipts import handlers as receipts
from ..runs import handlers as runs
from ..session import handlers as session
from ..sharing import handlers as sharing
from ..slurm import handlers as slurm
from ..usage import handlers as usage

ADDED = (
    *session.HANDLERS,
    *home.HANDLERS,
    # a session's time, answered with the home page's card of it (clock sits below home and cannot draw it)
    (clock.EXTEND_URL, clock.ExtendHandler, {"answer": home.extended}),
    *slurm.HANDLERS,
    *runs.HANDLERS,
    *receipts.HANDLERS,
    *sharing.HANDLERS,
    *continuation.HANDLERS,
    *usage.HANDLERS,
    *apps.HANDLERS,
    # pages and their static files, not API: JupyterHub prefixes this list with /hub as its own
    *usage.handlers(),
    *home.handlers(),
)
REPLACED = {**session.REPLACED, **sharing.REPLACED}  # JupyterHub's handler -> the portal's
# batchspawner's port callback: its import adds it to JupyterHub's list (spawner/hub/session/handlers.py)
REMOVED = (session.REPLACED_CALLBACK,)


def installed(handlers: list[tuple]) -> list[tuple]:
    """`handlers` with the portal's added, JupyterHub's replaced and batchspawner's removed (pure)."""
    kept = [route for route in handlers if route[1] not in REMOVED]
    replaced = [(url, REPLACED.get(handler, handler), *rest) for url, handler, *rest in kept]
    return replaced + [route for route in ADDED if route not in replaced]


def install() -> None:
    """Serve the portal's API with JupyterHub's: in the list JupyterHub builds its application from (idempotent)."""
    change_api_handlers(installed)
