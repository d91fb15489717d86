"""Where the hub goes past JupyterHub's public hooks: each place, why, and what it relies on (hub side).

Checked against JupyterHub 6.1.1 (pyproject.toml pins jupyterhub>=6.1,<7 for
this module); tests/unit/test_upstream_jupyterhub.py fails when JupyterHub
changes what a place below relies on.  Everything else of the hub's uses
JupyterHub's public API: config traits, handler classes to subclass, the
spawner's and authenticator's override points, its ORM.

- `apihandlers.default_handlers`, the module's list of API routes, changed in
  place (`change_api_handlers`): the portal's API is served from the list
  JupyterHub builds its application from (`JupyterHub.init_handlers` reads it
  when the hub starts), some of JupyterHub's handlers replaced by the portal's
  subclasses (spawner/hub/wiring/routes.py).  The public hook,
  `c.JupyterHub.extra_handlers`, is deprecated and puts its routes after
  JupyterHub's own, so it could not serve the stop API in place of
  JupyterHub's.  batchspawner's import appends its `/api/batchspawner`
  handler to the same list (batchspawner/api.py, batchspawner>=1.3,<2): the
  portal takes it out there (spawner/hub/session/handlers.py says why).
- `JupyterHub.cleanup`, a public method, replaced on the running application
  (`run_before_cleanup`): JupyterHub has no hook for its stop, and its signal
  handler awaits `cleanup()` before it cancels its tasks
  (spawner/hub/wiring/shutdown.py; tests/unit/test_shutdown.py checks that order).
- `Spawner._spawn_future`, the start under way (`cancel_start`): only
  JupyterHub's own stop API cancels a start; an account that loses access has
  its starts cancelled the same way (portal/auth.py, through the spawner).
- JupyterHub's ERROR lines about a start the portal refused, dropped by a log
  filter (`QuietRefusals`): they are recognised by the exception being handled
  when JupyterHub logs from its `except` blocks, and for the spawn page's
  "Previous spawn ... failed" line by the message's text, which holds the
  exception's class name (`SpawnException.__str__`).
- `orm.Base`, the declarative base of JupyterHub's tables, for the portal's
  one table (`TableBase`; spawner/hub/session/userrecord.py: a user's
  record, one row per user, removed with the user by its foreign key):
  JupyterHub creates every table of that base at each start
  (`orm.new_session_factory` calls `Base.metadata.create_all`), so the
  portal's is made where JupyterHub's database is, backed up with it, and
  needs no migration tool of its own.
- `JupyterHub.init_handlers`, a public method, wrapped on the running
  application (`replace_outside_handler`): it builds the routes outside the
  hub's prefix itself, after the prefix is added to the rest, and ends them
  with `PrefixRedirectHandler` for every path outside `/hub/` (a stopped
  session's URLs, which the proxy sends to the hub).  That handler
  authenticates every request it redirects (JupyterHub's `prepare`: cookies,
  tokens, scopes, the XSRF check) though its redirect reads none of it, and
  answers any other method with an HTML error page: the portal's
  (spawner/hub/base/outside.py) answers without them.  The wrapper replaces
  the route whose handler is that class, nothing else.
- `JupyterHub.init_spawners`, a public method, wrapped on the running
  application (`hold_running_users`): its query of the running servers asks
  SQLAlchemy to load each one's user and that user's servers in a few
  queries, with `populate_existing()`; the nested load of a user's servers
  loads the running servers again and resets their `user`, which dropped the
  only reference to the users loaded a moment before: SQLAlchemy's identity
  map holds its objects weakly, so each server's user, its roles, groups,
  shares and servers were asked for again, five queries per running server
  (with 2,000 sessions, 10,000 queries and most of a restart's time; JupyterHub
  6.1.1 with SQLAlchemy 2.1).  The wrapper loads the same rows in a few
  queries first and holds them until JupyterHub's start has read them, so
  its lazy loads find them in the identity map.
- `JupyterHub._service_map`, the services by name, handed to the proxy's
  public `check_routes` as JupyterHub's own checks hand it (`check_routes`):
  JupyterHub checks the proxy's routes only at its start and from its
  activity loop, which the portal turns off (`last_activity_interval = 0`,
  spawner/hub/wiring/hubconfig.py says why), so a restarted proxy (its own
  service: a crash, an admin's restart) held no session's route until the
  hub restarted.  The portal checks them itself (spawner/hub/apps/proxy.py
  `keep_routed`).
- The scopes of JupyterHub's default `server` role, copied
  (`default_server_scopes`): a session whose every token row is gone gets a new
  token with them (spawner/hub/session/token.py).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable

from jupyterhub import apihandlers, orm
from jupyterhub import handlers as jupyterhub_handlers
from sqlalchemy.orm import selectinload

TableBase = orm.Base  # the portal's table beside JupyterHub's (see above)

Routes = list[tuple]


def change_api_handlers(change: Callable[[Routes], Routes]) -> None:
    """Replace JupyterHub's API routes by `change(routes)`, in the list JupyterHub builds its application from
    (before the hub starts; the list object stays the same)."""
    apihandlers.default_handlers[:] = change(apihandlers.default_handlers)


def run_before_cleanup(app, first: Callable[[], Awaitable[None]]) -> bool:
    """Await `first()` before the cleanup of `app` (the running JupyterHub) whenever it stops; once per
    application.  Whether it was put in place now."""
    upstream = app.cleanup
    if getattr(upstream, "runs_portal_stop", False):
        return False

    async def cleanup() -> None:
        await first()
        await upstream()

    cleanup.runs_portal_stop = True
    app.cleanup = cleanup
    return True


def replace_outside_handler(app, handler: type) -> bool:
    """Serve the paths outside the hub's prefix that JupyterHub's `PrefixRedirectHandler` serves with `handler`
    in `app` (the JupyterHub whose config is loading, before it builds its routes); once per application.
    Whether it was put in place now."""
    upstream = app.init_handlers
    if getattr(upstream, "replaces_outside", False):
        return False

    def init_handlers() -> None:
        upstream()
        app.handlers = [
            (route[0], handler, *route[2:]) if route[1] is jupyterhub_handlers.PrefixRedirectHandler else route
            for route in app.handlers
        ]

    init_handlers.replaces_outside = True
    app.init_handlers = init_handlers
    return True


def hold_running_users(app) -> bool:
    """Load the running servers of `app` (the JupyterHub whose config is loading), their users and those users'
    servers in a few queries before its `init_spawners` runs, and hold them until it returns; once per
    application.  Whether it was put in place now."""
    upstream = app.init_spawners
    if getattr(upstream, "holds_running_users", False):
        return False

    async def init_spawners():
        held = running_servers(app.db)
        try:
            return await upstream()
        finally:
            del held

    init_spawners.holds_running_users = True
    app.init_spawners = init_spawners
    return True


def running_servers(db) -> list:
    """The rows JupyterHub's `init_spawners` reads (see above): every running server and its user, with the
    user's servers, roles, groups and shares.  The users are in the list themselves: JupyterHub's query resets
    the servers' `user`, which would drop them."""
    running = (
        db.query(orm.Spawner)
        .filter(orm.Spawner.server != None)  # noqa: E711 (SQL's IS NOT NULL)
        .options(selectinload(orm.Spawner.user).selectinload(orm.User._orm_spawners))
        .all()
    )
    return running + [spawner.user for spawner in running]


async def check_routes(app) -> None:
    """JupyterHub's check of every route of `app`'s proxy: the running sessions' added back, stale ones removed
    (see above)."""
    await app.proxy.check_routes(app.users, app._service_map)


def cancel_start(spawner) -> bool:
    """Cancel the start under way of `spawner`'s session, as JupyterHub's stop API does with a pending start.
    Whether there was one to cancel."""
    future = spawner._spawn_future
    if not future:
        return False
    future.cancel()
    return True


class QuietRefusals(logging.Filter):
    """Drops JupyterHub's ERROR records about a start refused with a `refused` exception; nothing else."""

    def __init__(self, refused: type[Exception]):
        super().__init__()
        self.refused = refused

    def filter(self, record: logging.LogRecord) -> bool:
        # JupyterHub logs from inside its `except` blocks, with or without exc_info: either names the refusal
        if record.levelno < logging.ERROR:
            return True
        handled = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        # the spawn page logs a finished start's exception outside any `except`, by its text (the class's name)
        return not (isinstance(handled, self.refused) or f"{self.refused.__name__}(" in record.getMessage())


def default_server_scopes(user_name: str, server_name: str) -> list[str]:
    """What JupyterHub gives a server token by default (its `server` role), for this user's session."""
    return [f"access:servers!server={user_name}/{server_name}", f"users:activity!user={user_name}"]
