"""Which of the hub's spawners are the portal's sessions, and whose session an API request may act on (hub side).

The portal's handlers (home, runs, sharing, usage) ask `own_spawner`; the hub's
background loops (spawner/hub/wiring/lifecycle.py) ask `hub_spawners`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tornado import web

from ..request.sessionlimits import user_sessions
from .token import refuse_ended
from .userrecord import users_with_open_runs

if TYPE_CHECKING:
    from .spawner import SlurmGPUSpawner


def own_spawner(handler, login_words: str) -> SlurmGPUSpawner:
    """The portal spawner of the user an API request comes from (their cookie, or a token of theirs that may
    use one of their servers); HTTP 403 or 404 with words otherwise.  It is the user's unnamed session's, which
    also keeps what is the user's (runs, the e-mail opt-in).  The session and runs APIs ask through this."""
    user = handler.current_user
    if user is None or not hasattr(user, "spawner"):  # a service's token is no user
        raise web.HTTPError(403, login_words)
    if not any(handler.has_scope(f"access:servers!server={user.name}/{name}") for name in [""] + list(user.spawners)):
        raise web.HTTPError(403, "This token may not act for you; use one that may access your server.")
    refuse_ended(handler, user_sessions(user))  # a session's token only while that session runs
    spawner = portal_spawner(user)
    if spawner is None:
        raise web.HTTPError(404, "This hub's sessions are not the portal's.")
    return spawner


def portal_spawner(user) -> SlurmGPUSpawner | None:
    """The user's session spawner, when it is the portal's (a hub with another spawner class has none)."""
    spawner = getattr(user, "spawner", None) if user is not None else None
    return spawner if is_portal_spawner(spawner) else None


def is_portal_spawner(spawner) -> bool:
    """A spawner of the portal's class (the hub may hold others: a hub config of another spawner class)."""
    return hasattr(spawner, "record") and hasattr(spawner, "slurm_client")


def load_users_with_runs(app) -> None:
    """Once, at the hub's start: JupyterHub holds in memory only the users with a server; a user whose
    runs have not ended yet is loaded too, so the tracker says when they end (and mails) without a login."""
    for orm_user in users_with_open_runs(app.db):
        _ = app.users[orm_user].spawner  # the user and a spawner of theirs, through which the tracker reads


def hub_spawners(app) -> list[SlurmGPUSpawner]:
    """Every portal spawner the running hub `app` holds (the background loops' sessions,
    spawner/hub/wiring/lifecycle.py, which loads the users with runs not ended once the hub runs)."""
    return [
        spawner
        for user in list(app.users.values())
        for spawner in list(user.spawners.values())
        if is_portal_spawner(spawner)
    ]
