"""Every portal endpoint's request body and each caller's request rate, bounded before the body is read (hub side).

Tornado reads a request's whole body (JupyterHub's server: up to 100 MB)
before a handler's code runs, unless the handler streams it: a 30 MB JSON
body to a portal API was read and parsed whole, stalling the hub and
doubling its memory.  So every portal handler (spawner/hub/wiring/routes.py) has
`Bounded` first among its bases:

- its body streams in, limited to hub.api_max_body_bytes while it arrives: a
  declared length over it is refused with a 413 with words before any of it
  is kept, an undeclared one that grows past it too; the rest of a refused
  body is read and dropped before the answer (portal/refusedbody.py: answered
  mid-upload, the proxy turned the refusal into a 503), and a client that
  sent `Expect: 100-continue` is answered at once, never sending it; what
  arrives is `request.body` (a bytearray, which json.loads and JupyterHub's
  get_json_body read as they read bytes);
- once JupyterHub has said who asks (its prepare), a token bucket per
  credential (caller_key) of hub.api_rate_per_minute with room for
  hub.api_burst at once: a caller over it gets a 429 with words and
  Retry-After, before the body is read.  A bucket per credential, not per
  user: a session's token authenticates as its owner and is readable by the
  session's guests and code, so a guest flooding with it must not drain what
  the owner's own browser (which revokes the share, stops the session) or
  scripts need.  The admin's services (the idle culler stops many sessions at
  once) and the session's own reports of its port and end (its lifeline,
  accepted only with its live token) are not rate-limited.

JupyterHub's own endpoints keep their handlers: `limit_hub_bodies`
(spawner/hub/base/upstream_tornado.py) caps every request body of the hub's
server at hub.max_body_bytes; over that tornado answers 400 ("Content-Length
too long") or closes the connection, before any handler runs.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from functools import partial

from tornado import web

from portal.clientaddress import address_of
from portal.refusedbody import DRAIN_BYTES, RefusesAfterBody, declared_size
from portal.throttle import LoginThrottle

from .upstream_tornado import finished

log = logging.getLogger("JupyterHub").getChild("requestlimits")

BODY_WORDS = (
    "This request's body is {size} bytes; the portal takes at most {limit} bytes here. Send only the fields "
    "this endpoint documents (the docs: reference, REST API)."
)
RATE_WORDS = (
    "Too many requests to the portal from you: at most {rate} a minute ({burst} at once). Wait {wait} s and try "
    "again; a script should pause between requests."
)


class RateLimiter:
    """A token bucket per key: `rate_per_minute` tokens a minute, at most `burst` saved (pure, with a clock)."""

    def __init__(
        self,
        rate_per_minute: int,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ):
        self.rate = rate_per_minute / 60
        self.burst = burst
        self.clock = clock
        self.max_keys = max_keys  # the least recently seen are forgotten (a forgotten key starts full)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when)

    def take(self, key: str) -> float:
        """Take one token for `key`: 0 when it had one, else the seconds until it will (nothing taken)."""
        now = self.clock()
        tokens, then = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return wait


def caller_key(user, token: str | None, address: str) -> str | None:
    """Whose bucket a request takes from (pure): a session's when the request came with that session's own token
    (its guests can read it: they drain the session's bucket, not its owner's), the user's for every other
    credential of theirs (their browser's cookie, every token they made, a token sent beside a cookie that did not
    authenticate anything: none of them opens a fresh bucket), the client address's when nobody logged in; None for
    the admin's services (not limited)."""
    if user is None:
        return f"address {address}"
    if getattr(user, "kind", "user") == "service":
        return None
    if token:
        for session in list(getattr(user, "spawners", {}).values()):
            holds = getattr(session, "holds_token", None)
            if holds is not None and holds(token):
                return f"session {user.name}/{session.name}"
    return f"user {user.name}"


def rate_limiter(services, rate_per_minute: int, burst: int) -> RateLimiter:
    """The hub's one limiter for these settings (shared by every portal handler), kept by its services."""
    return services.shared(("rate limiter", rate_per_minute, burst), lambda: RateLimiter(rate_per_minute, burst))


def raise_(error: Exception) -> None:
    raise error


SERVICES_KEY = "dsportal"  # tornado settings: the hub's shared services, for every portal handler


@web.stream_request_body
class Bounded(RefusesAfterBody):
    """First among a portal handler's bases: its body and its caller's rate, bounded before the body is read."""

    rate_limited = True  # False for a session's own lifeline reports (its port, its end, its token check)
    # False for the public static files (plotly.js, the home page's script): cheap GETs without a user, which a
    # flood from one address (a NAT's) would otherwise refuse to everyone behind it, breaking their pages
    limit_anonymous = True

    @property
    def portal_services(self):
        """The hub's shared services (spawner/hub/slurm/services.py: settings, Slurm client, shared answers),
        put in tornado's settings by the hub's config (spawner/hub/wiring/hubconfig.py).  Not `services`:
        JupyterHub's BaseHandler has a `services` of its own (its services, which its page rendering reads)."""
        return self.settings[SERVICES_KEY]

    def _limits(self):
        return self.portal_services.settings.hub

    def count_per_minute(self, key: tuple, limit: int, words: str) -> None:
        """One more of `key` for the logged-in caller; HTTP 429 with `words` when they asked for `limit` of it in
        the last minute already (what makes the hub read their files: a run's notebook, a receipt)."""
        name = self.current_user.name
        counts = self.portal_services.shared(key, lambda: LoginThrottle(limit, 60, 0))  # one counter per key
        if counts.failures(name) >= limit:
            raise web.HTTPError(429, words)
        counts.attempt([name])

    def refuse(self, status: int, words: str, retry_after: float = 0) -> None:
        """Answer in JSON with words, whatever the handler's own error pages are, once the rest of the request's
        body has arrived (dropped: portal/refusedbody.py); at once when there is none to wait for."""

        def answer() -> None:
            self.clear()
            self.set_status(status)
            # Answered before its body is read (one too large to read, or not sent yet: Expect), tornado closes the
            # connection after this answer: say so, or the proxy reuses the socket for the caller's next request
            # and answers it 503 (ECONNRESET)
            self.set_header("Connection", "close")
            self.set_header("Content-Type", "application/json; charset=UTF-8")
            if retry_after:
                self.set_header("Retry-After", str(max(1, round(retry_after))))
            self.finish(json.dumps({"status": status, "message": words}))

        self.request.body = bytearray()  # what was kept of it goes now
        if not self.refuse_after_body(answer):
            answer()

    def refuse_body(self, size: int, declared: bool = True) -> None:
        """A 413 with words for a body of `size` bytes (or more, when its length was not declared)."""
        limit = self._limits().api_max_body_bytes
        log.warning("%s %s refused: a body of %d bytes", self.request.method, self.request.path, size)
        self.refuse(413, BODY_WORDS.format(size=size if declared else f"over {limit}", limit=limit))

    async def prepare(self):
        hub = self._limits()
        self.request.body = bytearray()  # filled as the body streams in (data_received)
        size = declared_size(self.request.headers)
        # an undeclared body is refused in data_received past the limit and read on (dropped) up to DRAIN_BYTES
        self.request.connection.set_max_body_size(hub.api_max_body_bytes if size is not None else DRAIN_BYTES)
        if size is not None and size > hub.api_max_body_bytes:
            return self.refuse_body(size)
        try:
            ready = super().prepare()  # JupyterHub's: who is asking (and its XSRF check)
            if ready is not None:
                await ready
        except web.HTTPError as refused:  # a 403 (XSRF), a 401: said once the body has arrived, like ours
            if self.refuse_after_body(partial(raise_, refused)):
                return None
            raise
        if finished(self):  # a base's prepare has answered
            return None
        if not self.rate_limited and (self.current_user is not None or not self.limit_anonymous):
            return None  # else nobody logged in (a forged token) is limited by address
        address = address_of(self, hub)
        token_of = getattr(self, "get_auth_token", None)  # JupyterHub's handlers; a plain static file has none
        key = caller_key(self.current_user, token_of() if token_of else None, address)
        if key is None:
            return None
        wait = rate_limiter(self.portal_services, hub.api_rate_per_minute, hub.api_burst).take(key)
        if wait:
            log.warning("%s %s refused: %s over the portal's request rate", self.request.method, self.request.path, key)
            words = RATE_WORDS.format(rate=hub.api_rate_per_minute, burst=hub.api_burst, wait=max(1, round(wait)))
            return self.refuse(429, words, retry_after=wait)
        return None

    def data_received(self, chunk: bytes) -> None:
        if not self.kept(chunk):
            return
        self.request.body += chunk
        if len(self.request.body) > self._limits().api_max_body_bytes:  # an undeclared body grew past the limit
            self.refuse_body(self.received, declared=False)
