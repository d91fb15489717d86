"""Each app's own origin: where an app is served, and how a browser gets in there.

Runs in the session's Jupyter server (in the Slurm job, as the user).  An app
renders what it is given (a notebook's stored outputs in VS Code's webviews,
an MLflow page, the user's own Streamlit or Dash page, any file code-server
serves), and a script there must not act with the session's login: on the
session's own origin it could read Jupyter's XSRF cookie and drive its API.
Nor with another app's: on an origin shared with VS Code it could read any
file of the user's through VS Code's vscode-remote-resource, the session's
token among them (the second hostile review did).  So each app is served at
an origin of its own, `https://apps--RANDOM.<the hub's host>:PORT`, which the
hub draws and routes when the app starts (`route_at_hub`;
spawner/hub/apps/), where the browser holds none of the session's cookies
and no other app's.

The browser gets in through the session's origin: a navigation to the app's
address there (from JupyterLab, or typed) is redirected to the app's origin
with a ticket, single-use and short-lived, that stands for the visitor's
login (their token, which the session's origin already saw); the app's
origin takes the ticket once and gives the browser a cookie of its own
(`__Host-`, HttpOnly, SameSite=Strict) that names it.  Each later request
there is authenticated with that token, as if the browser had sent it: a
revoked guest is refused at the next request, and their open connections are
closed by the guests' check (spawner/jupyter/sharing/guests.py), as for any
connection of theirs.  The token never reaches the app (proxy.py drops
Authorization before it forwards).

What is kept is bounded: tickets (a minute each, the newest MAX_TICKETS) and
passes (MAX_PASSES, a day each at most; the token's own life is the hub's).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...contract import APPS_LABEL_PATTERN, APPS_ROUTES_PATH
from ..session.hubcall import ask_hub

ENTER_QUERY = "dsportal-enter"  # the ticket's name in the apps' origin's query
COOKIE_PREFIX = "__Host-dsportal-app-"  # + the app's id: the pass of one app
TICKET_SECONDS = 60.0
PASS_SECONDS = 24 * 3600.0
MAX_TICKETS = 100
MAX_PASSES = 500
APPS_HOST = re.compile(APPS_LABEL_PATTERN + r"\..+")


def per_user_origins(environ: dict[str, str]) -> bool:
    """Whether the hub serves each user at an origin of their own (JupyterHub names its host then), which the
    apps' own origins are made beside."""
    return bool(urlsplit(environ.get("JUPYTERHUB_HOST", "")).hostname)


async def unroute_at_hub(app_id: str) -> None:
    """The app stopped: the hub removes its route (web.HTTPError when it refuses)."""
    await ask_hub("DELETE", f"{APPS_ROUTES_PATH}/{app_id}")


async def route_at_hub(app_id: str) -> str:
    """The app's own origin, which the hub draws and routes (with the session's own token); web.HTTPError
    with the hub's words when it refuses."""
    _, body = await ask_hub("POST", APPS_ROUTES_PATH, json.dumps({"app": app_id}))
    origin = json.loads(body).get("origin", "")
    if not APPS_HOST.fullmatch(urlsplit(origin).hostname or ""):
        raise ValueError(f"the hub answered an address that is no app's: {origin!r}")
    return origin


def session_base(environ: dict[str, str]) -> str:
    """The session's own origin (scheme://host[:port]), from its OAuth callback's address; "" if not a URL."""
    callback = urlsplit(environ.get("JUPYTERHUB_OAUTH_CALLBACK_URL", ""))
    return f"{callback.scheme}://{callback.netloc}" if callback.scheme and callback.netloc else ""


@dataclass(frozen=True)
class Ticket:
    app_id: str
    token: str
    next_uri: str  # where the browser was going, below the app's prefix (path and query, credentials taken out)
    expires: float


@dataclass(frozen=True)
class Pass:
    app_id: str
    token: str
    expires: float


class Entries:
    """Tickets handed out on the session's origin, and the passes the apps' origin gave for them."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._tickets: OrderedDict[str, Ticket] = OrderedDict()
        self._passes: OrderedDict[str, Pass] = OrderedDict()

    def issue(self, app_id: str, token: str, next_uri: str) -> str:
        """A ticket into the app `app_id` for the holder of `token`, going to `next_uri`."""
        now = self.clock()
        self._drop_expired(self._tickets, now)
        ticket = secrets.token_urlsafe(32)
        self._tickets[ticket] = Ticket(app_id, token, next_uri, now + TICKET_SECONDS)
        while len(self._tickets) > MAX_TICKETS:
            self._tickets.popitem(last=False)
        return ticket

    def enter(self, ticket: str, app_id: str) -> tuple[str, Ticket] | None:
        """Spend a ticket at the app's door: (the new pass's key, the ticket), or None (unknown, spent, expired,
        or another app's)."""
        found = self._tickets.pop(ticket, None)
        now = self.clock()
        if found is None or found.app_id != app_id or found.expires <= now:
            return None
        self._drop_expired(self._passes, now)
        key = secrets.token_urlsafe(32)
        self._passes[key] = Pass(app_id, found.token, now + PASS_SECONDS)
        while len(self._passes) > MAX_PASSES:
            self._passes.popitem(last=False)
        return key, found

    def token(self, key: str, app_id: str) -> str | None:
        """The token a pass stands for, if it is this app's and still valid."""
        found = self._passes.get(key)
        if found is None or found.app_id != app_id or found.expires <= self.clock():
            return None
        return found.token

    def forget_app(self, app_id: str) -> None:
        """An app stopped: its tickets and passes go with it (a new app never has its id)."""
        for kept in (self._tickets, self._passes):
            for key in [k for k, v in kept.items() if v.app_id == app_id]:
                del kept[key]

    @staticmethod
    def _drop_expired(kept: OrderedDict, now: float) -> None:
        for key in [k for k, v in kept.items() if v.expires <= now]:
            del kept[key]
