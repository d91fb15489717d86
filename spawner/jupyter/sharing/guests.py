"""Guests in a shared session: who joined, what only the owner may do, and a revoked share ending at once.

Runs in the session's Jupyter server (JupyterHub's single-user server, in the
Slurm job, as the owner).  A session the owner shared (spawner/hub/sharing/shares.py)
lets the guests JupyterHub names in (its `access:servers` scope through the
share); everything they do runs as the owner.  JupyterHub's identity
provider is kept and extended where it falls short for guests:

- it caches the hub's answer for a token for 5 minutes (HubAuth.cache_max_age),
  so a revoked or expired share would let its guest in for minutes: an answer
  that names a guest is never kept (however many tokens a guest brings), and
  the session's own token, which a guest's code could copy and which the hub
  replaces when a share ends (handover.py), is asked about
  afresh on every request too;
- it checks a websocket once, when it opens, so a guest's open kernel, terminal
  and collaboration connections would outlive the share: every
  `sharing.check_seconds` (and at once when the session's token is replaced)
  the open ones of guests, and those opened with the session's own token, are
  asked about again, and closed (code 4403) once the hub no longer lets them in;
- it lets any user it admits do anything: stopping the session (JupyterLab's
  Shut Down), extending it and the jobs panel stay the owner's (HTTP 403);
- it logs nothing of who came in: the session log gets a line when a guest
  joins (again after `REJOIN_SECONDS` away) and when one is cut off.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from datetime import datetime

from jupyterhub.singleuser import extension as singleuser
from tornado import web
from tornado.ioloop import PeriodicCallback
from tornado.websocket import WebSocketHandler
from traitlets import default

from ...sessionspec import SessionSpec
from ..session.token import is_session_token
from ..session.upstream_jupyterhub import HubOAuthAsked, identified, identified_user, use_identity_provider
from ..session.upstream_tornado import ended_before_open, ignore_further_frames

REJOIN_SECONDS = 600.0  # a guest seen again after this long away "joins" again in the log
CLOSED_CODE = 4403  # the websocket close code a guest's connections get when their access ends

log = logging.getLogger("dsportal.guests")


def owner_name() -> str:
    return os.environ.get("JUPYTERHUB_USER", "")


def is_guest(model: dict | None, owner: str) -> bool:
    """Whether the hub's user model names someone other than the session's owner (pure)."""
    return bool(model) and model.get("kind", "user") == "user" and model.get("name") != owner


class SessionHubOAuth(HubOAuthAsked):
    """JupyterHub's HubOAuth, asking the hub afresh about every guest's token and the session's own (see the
    module's words)."""

    def ask_afresh(self, token: str) -> bool:
        return is_session_token(token)  # a share's end replaces it: its holder is asked about at each request

    def may_keep(self, model: dict | None) -> bool:
        # a guest's answer is never reused: a revoked share refuses the guest's next request.  Dropped, not
        # remembered as a guest's token to skip: no list of guests' tokens for a flood of fresh ones to clear
        return not is_guest(model, owner_name())

    async def still_admitted(self, token: str) -> bool:
        """Whether the hub still lets the holder of `token` into this session (False when it did not answer
        with a user: a deleted token, a revoked or expired share)."""
        model = await self.user_for_token(token, use_cache=False, sync=False)
        return bool(model) and bool(self.check_scopes(self.access_scopes, model))


class GuestIdentityProvider(singleuser.JupyterHubIdentityProvider):
    """JupyterHub's identity provider, with the guests' rules (see the module's words)."""

    owner_only: tuple[type, ...] = ()  # handler classes only the owner may use (set by `install`)

    @default("hub_auth")
    def _default_hub_auth(self):
        return SessionHubOAuth(parent=self)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen: dict[str, float] = {}  # guest -> when last seen (monotonic)
        self.sockets: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # open guest websocket -> (name, token)
        self.watch: PeriodicCallback | None = None

    async def get_user(self, handler):
        if identified(handler):  # asked before about this request: the additions below ran then
            return identified_user(handler)
        user = await super().get_user(handler)
        model = getattr(user, "hub_user", None)
        if user is None:
            return user
        if not is_guest(model, owner_name()):
            if isinstance(handler, WebSocketHandler):
                token = self.hub_auth.get_token(handler) or ""
                if is_session_token(token):  # a copy of it may be a guest's: its connection ends with the token
                    self.sockets[handler] = (owner_name(), token)
                    self._watch()
            return user
        name = model["name"]
        if isinstance(handler, self.owner_only):
            raise web.HTTPError(403, f"Only {owner_name()} can do this: you are a guest in their session.")
        now = time.monotonic()
        if now - self.seen.get(name, -REJOIN_SECONDS) >= REJOIN_SECONDS:
            say(f"{name} joined {owner_name()}'s session")
        self.seen[name] = now
        if isinstance(handler, WebSocketHandler):
            token = self.hub_auth.get_token(handler) or ""  # the one that let it in: URL, header, then cookie
            self.sockets[handler] = (name, token)
            self._watch()
        return user

    def _watch(self) -> None:
        if self.watch is None:
            seconds = SessionSpec.from_environ(os.environ).guest_check_seconds
            self.watch = PeriodicCallback(self.check_guests, seconds * 1000)
            self.watch.start()

    async def check_guests(self) -> None:
        """Close each open guest connection whose guest the hub no longer lets in (one question a token)."""
        verdicts: dict[str, bool] = {}
        for handler, (name, token) in list(self.sockets.items()):
            state = socket_state(handler)
            if state == "closed":
                self.sockets.pop(handler, None)
                continue
            if state == "opening":  # asked about when open (within a check); taken for closed, it outlived a revoke
                continue
            if token not in verdicts:
                try:
                    verdicts[token] = bool(token) and await self.hub_auth.still_admitted(token)
                except Exception as e:  # noqa: BLE001 - a hub that does not answer ends no one's connection
                    log.warning("dsportal: could not ask the hub about %s's access: %s", name, e)
                    verdicts[token] = True
            if not verdicts[token]:
                self.sockets.pop(handler, None)
                cut_off(handler)
                if self.seen.pop(name, None) is not None:
                    say(f"{name}'s access ended (the share was revoked or expired): their connections were closed")
                elif name == owner_name():
                    say("a connection opened with the session's replaced token was closed")


def socket_state(handler) -> str:
    """The websocket's state: "open"; "opening" (authenticated, its handshake not done: jupyter_server prepares the
    kernel first, which takes a while); or "closed" (closed or closing, or its handshake failed).  Tornado holds no
    connection while opening nor after a close: its own flags tell them apart.  A request that never became a
    websocket (no Sec-WebSocket-Key: tornado answers 400) keeps a connection without a stream: closed."""
    ws = handler.ws_connection
    if ws is not None:
        return "closed" if getattr(ws, "stream", None) is None or ws.is_closing() else "open"
    if ended_before_open(handler):
        return "closed"
    return "opening"


def cut_off(handler) -> None:
    """Close a guest's websocket with CLOSED_CODE and take nothing more from it: tornado would hand the guest's
    frames on until the guest answers the close (or for 5 s).  One that cannot be closed is logged; the check
    still closes the others."""
    ws = handler.ws_connection
    try:
        handler.close(CLOSED_CODE, "Your access to this shared session has ended.")
    except Exception as e:  # noqa: BLE001 - one broken connection must not keep the others open
        log.warning("dsportal: closing a guest's connection failed: %s", e)
    if ws is not None:
        ignore_further_frames(ws)


def say(line: str) -> None:
    """A line in the session log (the job's output), with the time."""
    print(f"[dsportal {datetime.now().astimezone().isoformat(timespec='seconds')}] {line}", flush=True)


def install(owner_only: tuple[type, ...]) -> None:
    """Make JupyterHub's single-user server use the guests' identity provider (call before it starts)."""
    GuestIdentityProvider.owner_only = owner_only
    use_identity_provider(GuestIdentityProvider)
