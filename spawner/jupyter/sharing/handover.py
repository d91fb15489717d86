"""The new token the hub hands a session when a share ends, taken in the session's Jupyter server (as the owner).

A guest's code ran as the owner and could copy the session's token
(spawner/jupyter/session/token.py), so when a share ends the hub replaces it
(spawner/hub/sharing/handover.py: the old one is dead at once) and POSTs the
new one here, to the server's own address:

    POST {base}dsportal/session/token   {"token": NEW}  -> 204 taken; 403 not this session's live token
    X-DSPortal-Offer-Proof: PROOF,...   a proof keyed by each token the session may hold (spawner/contract.py)

Anyone who reaches the port could post here.  An offer without a proof keyed
by the session's token (or no offer at all) is refused, counted in the log
once a minute, not line by line: the session asks the hub nothing about a
stranger's offer (a flood of them, each a question to the hub, slowed the hub
for everyone), and answers it after a pause (STRANGER_PAUSE, MAX_HELD at a
time), so that a flood's connections send a few offers a second through the
proxy, not hundreds.  Proven offers are checked one at a time, in turn, each
proof again in its turn: a guest, who held the session's token, can make
proofs until the session takes the new one; those queue with the hub's offer,
never ahead of it for good.
A proven offer is taken only once the hub, asked with the token (GET {hub
api}/dsportal/session/token, spawner/hub/sharing/handlers.py), answers that it
is the current token of this very session (its user and server name):
whoever held the old token (a guest) can make a proof, but the guest holds
only the old token, which the hub now refuses.
Taken, the new token serves every call the session makes to the hub from then
on (JupyterHub's HubOAuth objects, hubcall.py, the port keeper's end report
through tokenpipe.py); the hub's cached answers about tokens are dropped and
the open connections are checked again (guests.py).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.ioloop import IOLoop

from ...contract import (
    MAX_OFFER_PROOFS,
    TOKEN_CHECK_PATH,
    TOKEN_OFFER_HEADER,
    TOKEN_PUSH_PATH,
    offer_proof,
    token_digest,
)
from ..session import token as sessiontoken

CHECK_TIMEOUT = 10  # seconds the hub has to say whose token an offered one is
# A stranger's offer is answered after this pause, MAX_HELD of them at a time (more at once: at once): answered at
# once, 8 connections sent ~390 a second through the proxy, whose work for them slowed every user's requests
STRANGER_PAUSE = 0.5
MAX_HELD = 64
STRANGER_WORDS = "Not an offer of the hub's: it carries no proof keyed by the session's token."
MAX_BODY = 1024


def is_proven(offered: str, proofs: str) -> bool:
    """Whether one of an offer's proofs is keyed by the token the session holds now (see the module's words)."""
    own = sessiontoken.current()
    if not own:
        return False
    expected = offer_proof(token_digest(own), offered).encode()
    return any(hmac.compare_digest(p.strip().encode(), expected) for p in proofs.split(",")[:MAX_OFFER_PROOFS])


class Refusals:
    """A count of the strangers' offers refused, logged once a minute (each one logged, a flood of them would fill
    the owner's log in their home)."""

    def __init__(self, every: float = 60.0):
        self.every, self.count, self.since = every, 0, time.monotonic()

    def add(self, log) -> None:
        self.count += 1
        if time.monotonic() - self.since >= self.every:
            log.warning(
                "dsportal: refused %d token offers without the hub's proof in the last %.0f s (anyone who reaches "
                "the session's port may send them; the hub was asked about none)",
                self.count,
                time.monotonic() - self.since,
            )
            self.count, self.since = 0, time.monotonic()


def parse_offer(body: bytes) -> str:
    """The request body -> the offered token; ValueError with the reason (pure)."""
    if len(body) > MAX_BODY:
        raise ValueError("the body is too long")
    try:
        offer = json.loads(body or b"null")
    except ValueError:
        raise ValueError("the body is not JSON") from None
    if not isinstance(offer, dict) or set(offer) != {"token"} or not isinstance(offer["token"], str):
        raise ValueError('send {"token": TOKEN}')
    token = offer["token"]
    if not 8 <= len(token) <= 255 or not token.isascii() or not token.isalnum():
        raise ValueError("that is no token")
    return token


async def hub_says_ours(token: str, environ=os.environ) -> bool:
    """Whether the hub, asked with `token`, says it is the current token of this session (user and server)."""
    request = HTTPRequest(
        environ["JUPYTERHUB_API_URL"].rstrip("/") + TOKEN_CHECK_PATH,
        headers={"Authorization": f"token {token}"},
        request_timeout=CHECK_TIMEOUT,
        follow_redirects=False,
    )
    try:
        answer = await AsyncHTTPClient().fetch(request)
        whose = json.loads(answer.body)
    except (HTTPClientError, OSError, ValueError):
        return False
    return (
        isinstance(whose, dict)
        and whose.get("user") == environ.get("JUPYTERHUB_USER", "")
        and whose.get("server") == environ.get("JUPYTERHUB_SERVER_NAME", "")
    )


def hub_auths(serverapp, token: str) -> list:
    """Every HubOAuth of this server that holds `token`: the identity provider's (logins, the check of each
    request's token) and JupyterHub's extension app's (activity reports), each once."""
    found = [getattr(serverapp.identity_provider, "hub_auth", None)]
    found += [getattr(point.app, "hub_auth", None) for point in serverapp.extension_manager.extension_points.values()]
    unique = {id(auth): auth for auth in found if auth is not None and getattr(auth, "api_token", None) == token}
    return list(unique.values())


def take(serverapp, token: str) -> None:
    """Make `token` the session's token everywhere this server holds it."""
    for auth in hub_auths(serverapp, sessiontoken.current()):
        auth.api_token = token
        auth.cache.clear()  # answers about tokens given while the old one was live are asked for again
    sessiontoken.become(token)
    check = getattr(serverapp.identity_provider, "check_guests", None)
    if check is not None:  # the open connections of guests and of the old token, now
        IOLoop.current().add_callback(check)


class TokenHandler(JupyterHandler):
    """The hub hands the session its new token (see the module's words)."""

    _taking = asyncio.Lock()  # one offer at a time, in turn: the hub's retries must not race each other
    _held = [0]  # strangers' offers held for STRANGER_PAUSE now
    _refusals = Refusals()
    _stranger = False

    def _log(self):
        # tornado's per-request log line (its documented override): a stranger's are counted instead
        if not self._stranger:
            super()._log()

    def check_xsrf_cookie(self):
        return None  # no cookie or login is used here: the offered token itself is checked with the hub

    def answer(self, status: int, words: str = "") -> None:
        self.set_status(status)
        if words:
            self.set_header("Content-Type", "application/json; charset=UTF-8")
            self.finish(json.dumps({"status": status, "message": words}))
        else:
            self.finish()

    async def refuse_stranger(self, status: int, words: str) -> None:
        """Answered after a pause, counted, not logged one by one (see the module's words)."""
        self._stranger = True
        self.request.body = b""  # not kept through the pause
        self._refusals.add(self.log)
        if self._held[0] < MAX_HELD:
            self._held[0] += 1
            try:
                await asyncio.sleep(STRANGER_PAUSE)
            finally:
                self._held[0] -= 1
        self.answer(status, words)

    @allow_unauthenticated
    async def post(self):
        try:
            token = parse_offer(self.request.body)
        except ValueError as e:
            return await self.refuse_stranger(400, f"Not a token offer: {e}.")
        if sessiontoken.is_session_token(token):
            return self.answer(204)
        if not is_proven(token, self.request.headers.get(TOKEN_OFFER_HEADER, "")):
            return await self.refuse_stranger(403, STRANGER_WORDS)
        async with self._taking:  # in turn: whoever holds the session's token can make a proof (a guest)
            await self.take_if_ours(token)

    async def take_if_ours(self, token: str) -> None:
        # asked again: an offer proven with a token the session held when it came may have waited for another
        if sessiontoken.is_session_token(token):
            return self.answer(204)
        if not is_proven(token, self.request.headers.get(TOKEN_OFFER_HEADER, "")):
            return self.answer(403, STRANGER_WORDS)
        if not await hub_says_ours(token):
            self.log.warning("dsportal: refused a token offered as the session's new one (the hub denies it)")
            return self.answer(403, "The hub does not say this is the session's token.")
        take(self.settings["serverapp"], token)
        self.log.warning("dsportal: the hub replaced the session's token (a share ended); the old one is dead")
        return self.answer(204)


def load(serverapp) -> None:
    """Install the handler (spawner/jupyter/extension.py calls this)."""
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, TOKEN_PUSH_PATH), TokenHandler)])
