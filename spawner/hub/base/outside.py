"""Requests to the hub for paths outside `/hub/`, answered without reading who sends them (hub side).

The proxy sends the hub every request it has no route for: those to a
session that stopped (or has not started yet), from a JupyterLab tab left
open, a stale link, or anybody on the network.  JupyterHub serves them with
its `PrefixRedirectHandler`, which first does what every hub page does
(`prepare`: reads the cookie or token, resolves roles and scopes, checks
XSRF) though its redirect reads none of it, and answers a method other than
GET with a rendered HTML error page (403 "'_xsrf' argument missing").  A
flood of token offers to another user's stopped session, 77 a second from
one address, cost 11-310 ms of the hub's event loop each: other users' home
pages waited over 1 s (the soak, tests/integration/test_soak.py).

This handler serves those paths in its place (installed by the hub's config
through spawner/hub/base/upstream_jupyterhub.py): a GET or HEAD gets
JupyterHub's own redirect into `/hub/` (where the user's session page or
JupyterHub's "not running" answer reads the credentials, once), any other
method a short JSON 424 with words, as JupyterHub answers an API request to
a stopped server; neither reads a cookie, a token or the database, and an
error tornado answers before the handler runs (an unknown method's 405, an
unparsable body's 400) is JSON too, not JupyterHub's rendered page.  It
answers what a flood sends as cheaply as the hub answers anything, and an
address that sends more than hub.api_rate_per_minute requests of a method
other than GET and HEAD here (past hub.api_burst at once) gets a 429 with
words, late (MOST_DELAY): a flood that waits for each answer slows down to a
few requests a second.  At most MOST_HELD answers wait at once (each holds a
connection, a file descriptor of the hub's); past them the 429 goes at once,
as cheap as the rest.
"""

from __future__ import annotations

import asyncio
import json

from jupyterhub.handlers.base import PrefixRedirectHandler
from jupyterhub.utils import url_path_join

from portal.clientaddress import address_of

from .requestlimits import RATE_WORDS, SERVICES_KEY, log, rate_limiter

NOT_RUNNING_WORDS = (
    "No session is running at {path}: it stopped, or it is still starting. Open the portal's home page ({home}) "
    "to start it or to see its state, then try again."
)
REDIRECTED = frozenset({"GET", "HEAD"})
HELD_KEY = "dsportal_outside_held"  # in tornado's application settings: answers held back now (MOST_HELD)
MOST_PATH = 200  # characters of the path the words repeat
# An address over its rate waits 1 s or until its next request is due, at most this long, for its 429: a flood
# that sends its next request once answered (a loop over a few connections) then sends a few a second, not
# hundreds, and costs the hub nothing while it waits.  Its connections stay open meanwhile, as a slow client's do.
MOST_DELAY = 5.0
# Answers held back at once, for every address together: each holds a connection (a file descriptor of the hub's)
# while it waits; past this many a 429 goes at once.
MOST_HELD = 64


class Held:
    """How many answers are held back now (one per hub application)."""

    def __init__(self) -> None:
        self.now = 0


class OutsideHub(PrefixRedirectHandler):
    """JupyterHub's redirect into /hub/ for GET and HEAD; a 424 with words for the rest; no credentials read."""

    async def prepare(self):
        # Nobody: JupyterHub's log line and error page read the user, and its XSRF check (which tornado runs
        # before prepare) reads nothing until this is set; the redirect needs no credentials, so none are read
        self._jupyterhub_user = None
        self.expanded_scopes = set()
        if self.request.method in REDIRECTED:
            # Not limited: a redirect costs the hub what the cheapest answer does, and a bucket shared by
            # everyone behind one address (a NAT's, or the proxy's own where the hub cannot tell its clients
            # apart) would let one flood deny everyone the way into /hub/, the portal's front page among them
            return None
        hub = self.settings[SERVICES_KEY].settings.hub
        key = f"outside {address_of(self, hub)}"  # a bucket of its own: a flood here leaves its API requests alone
        wait = rate_limiter(self.settings[SERVICES_KEY], hub.api_rate_per_minute, hub.api_burst).take(key)
        if wait:
            held = self.settings.setdefault(HELD_KEY, Held())  # the hub application's one count
            if held.now < MOST_HELD:
                path = self.request.path[:MOST_PATH]
                log.warning("%s %s refused late: %s over the portal's request rate", self.request.method, path, key)
                held.now += 1
                try:
                    await asyncio.sleep(min(max(wait, 1.0), MOST_DELAY))
                finally:
                    held.now -= 1
            return self.too_many(hub, wait)
        return self.not_running()

    def head(self):
        return self.get()

    def write_error(self, status_code: int, **kwargs) -> None:
        """An error tornado answers before prepare (a method it does not serve: 405; a body it cannot parse: 400)
        in JSON, not JupyterHub's rendered page: as cheap as the answers above."""
        self.answer(status_code, self._reason)

    def not_running(self) -> None:
        words = NOT_RUNNING_WORDS.format(path=self.request.path[:MOST_PATH], home=self.hub_url("home"))
        self.answer(424, words)

    def too_many(self, hub, wait: float) -> None:
        seconds = max(1, round(wait))
        self.set_header("Retry-After", str(seconds))
        self.answer(429, RATE_WORDS.format(rate=hub.api_rate_per_minute, burst=hub.api_burst, wait=seconds))

    def answer(self, status: int, words: str) -> None:
        """The whole answer: `status` and its words in JSON, as the portal's API answers."""
        if self.get_status() != status:  # an error's status (and reason) tornado set already stays as it is
            self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"status": status, "message": words}))

    def hub_url(self, path: str) -> str:
        """The hub's own URL for `path` under /hub/, as JupyterHub's redirect builds it (its domain when sessions
        have their own subdomains)."""
        local = url_path_join(self.hub.base_url, path)
        public_url = self.settings.get("public_url")
        subdomain_host = self.settings.get("subdomain_host")
        if public_url:
            return public_url._replace(path=local).geturl()
        if subdomain_host:
            return url_path_join(subdomain_host, local)
        return local
