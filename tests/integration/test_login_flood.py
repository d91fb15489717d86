"""A flood of bad logins from one address, through the real proxy and hub, while alice logs in from another.

Before the fix the flood's slowed logins held all `max_waiting` directory
slots while they waited, and alice's correct password got 503 "Too many
logins right now" for as long as the flood lasted (portal/auth.py).
"""

from __future__ import annotations

import http.client
import re
import ssl
import threading
import time
from urllib.parse import urlencode

import pytest

from tests.support.cluster import HUB
from tests.support.demo import password_of
from tests.support.hub import form_login

# the dev cluster to itself (tests/support/lanes.py): floods the login from the address every test logs in from
pytestmark = pytest.mark.alone

FLOODER = "127.0.0.2"  # another address on the loopback: the proxy forwards it to the hub as the client's
THREADS = 96  # more than ldap.max_waiting (64) logins in flight at once


class Flood:
    """Bad logins of made-up usernames, THREADS at a time, from FLOODER, until stopped."""

    def __init__(self):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.statuses: list[int] = []
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(THREADS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def run(self, n: int) -> None:
        host = HUB.split("//")[1].split(":")[0]
        conn = http.client.HTTPSConnection(
            host, 8000, source_address=(FLOODER, 0), timeout=60, context=ssl.create_default_context()
        )
        conn.request("GET", "/hub/login")
        answer = conn.getresponse()
        page = answer.read().decode()
        cookies = "; ".join(c.split(";")[0] for c in answer.headers.get_all("Set-Cookie") or [])
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
        attempt = 0
        while not self.stop.is_set():
            attempt += 1
            body = urlencode({"_xsrf": xsrf, "username": f"nobody{n}x{attempt}", "password": "wrong"})
            with self.lock:
                self.in_flight += 1
            try:
                conn.request(
                    "POST",
                    "/hub/login",
                    body=body,
                    headers={"Cookie": cookies, "Content-Type": "application/x-www-form-urlencoded"},
                )
                answer = conn.getresponse()
                answer.read()
            finally:
                with self.lock:
                    self.in_flight -= 1
            with self.lock:
                self.statuses.append(answer.status)
        conn.close()


def test_a_login_flood_from_one_address_never_turns_away_alices_correct_password(cluster):
    flood = Flood()
    flood.start()
    try:
        # the flood's first failures are answered at once; then its address is slowed and its logins wait
        cluster.wait(lambda: len(flood.statuses) >= 40 and flood.in_flight >= 70, 60, "the flood being slowed")
        started = time.monotonic()
        status, page, location = form_login(HUB, "alice", password_of("alice"))
        seconds = time.monotonic() - started
        in_flight = flood.in_flight
    finally:
        flood.join()
    assert (status, location[:5]) == (302, "/hub/"), page[:300]  # before the fix: 503 "Too many logins right now"
    assert seconds < 10, seconds  # not slowed: alice's address has no failures
    assert in_flight >= 64  # the flood still held more logins than the directory has slots when alice logged in
    assert 429 in flood.statuses  # the flood was turned away, at its own address
