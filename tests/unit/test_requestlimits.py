"""The portal's request limits (spawner/hub/base/requestlimits.py): the token bucket, whose bucket a request takes
from, and that every portal route's handler is bounded."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tornado.httputil import HTTPHeaders

from spawner.hub.base.requestlimits import Bounded, RateLimiter, caller_key, declared_size
from spawner.hub.wiring import routes


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_gives_its_burst_at_once_then_its_rate_and_says_how_long_to_wait():
    clock = Clock()
    limiter = RateLimiter(rate_per_minute=60, burst=3, clock=clock)
    assert [limiter.take("user alice") for _ in range(3)] == [0, 0, 0]
    assert limiter.take("user alice") == pytest.approx(1.0)  # one a second: the next in 1 s
    assert limiter.take("user bob") == 0  # each caller has a bucket of their own
    clock.now += 0.5
    assert limiter.take("user alice") == pytest.approx(0.5)  # a refused request takes nothing
    clock.now += 0.5
    assert limiter.take("user alice") == 0
    clock.now += 3600
    assert [limiter.take("user alice") for _ in range(4)][-1] > 0  # saved up: the burst, never more


def test_a_bucket_forgets_the_least_recently_seen_callers_past_its_bound():
    limiter = RateLimiter(rate_per_minute=1, burst=1, clock=Clock(), max_keys=2)
    for key in ("a", "b", "c"):
        assert limiter.take(key) == 0
    assert limiter.take("c") > 0 and limiter.take("b") > 0
    assert limiter.take("a") == 0  # forgotten: starts full again (memory stays bounded)


def test_whose_bucket_a_request_takes_from():
    train = SimpleNamespace(name="train", holds_token=lambda token: token == "session-token")
    alice = SimpleNamespace(kind="user", name="alice", spawners={"train": train})
    assert caller_key(alice, None, "10.0.0.5") == "user alice"  # her browser's cookie
    session, own = caller_key(alice, "session-token", "10.0.0.5"), caller_key(alice, "her-script-token", "10.0.0.5")
    # a session's own token (its guests have it) drains that session's bucket, not her browser's or her scripts'
    assert session == "session alice/train" and "session-token" not in session
    # every other credential of hers is hers: a token of her own, or any string sent beside her cookie
    assert own == "user alice" and caller_key(alice, "random-3f9a", "10.0.0.5") == "user alice"
    assert caller_key(SimpleNamespace(kind="service", name="cull-idle"), "tok", "10.0.0.5") is None
    assert caller_key(None, "forged", "10.0.0.5") == "address 10.0.0.5"


def test_a_sessions_lifeline_reports_are_not_rate_limited():
    """A guest flooding with the session's token must not get its port or end report refused (the start would
    wait with its job held); every other portal handler is limited."""
    from spawner.hub.session.handlers import EndedHandler, PortHandler
    from spawner.hub.sharing.handlers import TokenCheckHandler
    from spawner.hub.wiring import routes

    lifelines = (PortHandler, EndedHandler, TokenCheckHandler)  # and the check of a share's end's new token
    assert not any(h.rate_limited for h in lifelines)
    limited = [h for h in {r[1] for r in routes.ADDED} if issubclass(h, Bounded) and h.rate_limited]
    assert limited and all(h not in lifelines for h in limited)


def test_a_declared_body_size_reads_only_as_a_plain_number():
    assert declared_size(HTTPHeaders({"Content-Length": "31457280"})) == 31457280
    assert declared_size(HTTPHeaders({"Transfer-Encoding": "chunked"})) is None
    assert declared_size(HTTPHeaders({"Content-Length": "-1"})) is None


def test_every_portal_route_is_bounded_before_its_body_is_read():
    handlers = [route[1] for route in routes.ADDED] + list(routes.REPLACED.values())
    unbounded = [h.__name__ for h in handlers if not issubclass(h, Bounded)]
    assert unbounded == []
    assert all(h._stream_request_body for h in handlers)  # tornado hands the body over as it arrives


def test_no_portal_handler_hides_a_jupyterhub_handler_attribute():
    """The portal's base mixin sits first in every handler's bases: a name it defines wins over JupyterHub's.  It once
    defined `services` (the portal's), hiding JupyterHub's dict of its services, and every page JupyterHub renders
    through `render_template` (the usage and status pages) answered 500."""
    from jupyterhub.handlers import BaseHandler

    handlers = {route[1] for route in routes.ADDED} | set(routes.REPLACED.values())
    pages = [h for h in handlers if issubclass(h, BaseHandler)]
    assert pages
    for handler in pages:
        for name in vars(Bounded):
            if not name.startswith("_") and hasattr(BaseHandler, name):  # public names (tornado sets flags)
                assert getattr(handler, name) is getattr(BaseHandler, name) or name in {"prepare", "data_received"}, (
                    handler,
                    name,
                )
