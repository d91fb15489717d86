"""The dev cluster's demo people as the tests use them (declared once, in deploy/dev/demo.py)."""

from __future__ import annotations

from deploy.dev import demo
from tests.support import lanes

# the people the tests act as (the side lane's, demo.SIDE_PEOPLE, in tests/support/lanes.py); the soak's users
# (demo.SOAK_USERS) are the soak's own (tests/soak), which cleans them
USERS = tuple(u.name for u in demo.PEOPLE)


def password_of(name: str) -> str:
    """The demo user `name`'s password, in the demo directory and on the dev cluster (for a login: refused for a
    person of the other lane, as a token or a start is)."""
    lanes.check_person(name, lanes.lane())
    return demo.user(name).password


def uid_of(name: str) -> int:
    return demo.user(name).uid
