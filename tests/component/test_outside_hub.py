"""The hub's answer for paths outside /hub/ (a stopped session's), through a real proxy and hub (mock Slurm).

The attack (the soak's hostile user, tests/soak/hostile.py): a flood of token offers, POSTs to another user's
session, from one address, each sent once the last is answered.  While that session ran, the session refused them itself; once it stopped the proxy
sent them to the hub, whose JupyterHub handler authenticated each (the sender's own token, sent along, was
looked up every time) and rendered an HTML 403 page: 11-310 ms of the hub's event loop apiece, and the other
users' home pages waited over 1 s.  Now each is answered 424 with words, without reading a credential, and past
the address's rate a 429 with words comes a second late: the flood slows to a request a second a connection.
"""

from __future__ import annotations

import http.client
import json
import secrets
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from tests.support.http import json_request, raw_request, wait_until

OFFER_PATH = "/user/bob/s2/dsportal/session/token"  # bob's session s2, not running
FLOOD_SECONDS = 3.0
CONNECTIONS = 8


@pytest.fixture(scope="module")
def a_hub(a_hub_and_its_slurm):
    return a_hub_and_its_slurm[0]


@pytest.fixture(scope="module")
def alices_token(a_hub) -> str:
    status, body = a_hub.api("POST", "/users/alice/tokens", {"note": "outside", "expires_in": 3600})
    assert status == 201, body
    return body["token"]


def log_lines_for(hub, path: str, method: str) -> list[str]:
    return [line for line in hub.log.read_text(errors="replace").splitlines() if f" {method} {path} " in line]


def test_an_offer_to_another_users_stopped_session_gets_words_without_the_hub_reading_the_senders_token(
    a_hub, alices_token
):
    status, body = json_request(
        "POST", f"{a_hub.url}{OFFER_PATH}", {"token": secrets.token_hex(16)}, token=alices_token
    )
    assert status == 424, body  # was 403, JupyterHub's HTML page "'_xsrf' argument missing"
    assert isinstance(body, dict) and "No session is running at /user/bob/s2/" in body["message"], body
    assert "home page" in body["message"] and "/hub/home" in body["message"], body
    # JupyterHub's log line names who sent a request it authenticated ("alice@127.0.0.1"): nobody here
    lines = wait_until(lambda: log_lines_for(a_hub, OFFER_PATH, "POST"), 10)  # logged once answered
    assert lines and all("(@" in line for line in lines), lines[-3:]


def test_a_get_or_head_of_a_stopped_session_is_still_jupyterhubs_redirect_into_the_hub(a_hub):
    for method in ("GET", "HEAD"):
        status, _, headers = raw_request(method, f"{a_hub.url}/user/bob/s2/lab?reset", {})
        assert status == 302, (method, status)
        assert headers["location"] == "/hub/user/bob/s2/lab?reset", (method, headers)


def _flood(url: str, deadline: float, counts: Counter, bodies: list, lock: threading.Lock) -> None:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    while time.monotonic() < deadline:
        connection.request("POST", parts.path, json.dumps({"token": secrets.token_hex(16)}), {})
        answer = connection.getresponse()
        body = answer.read()
        with lock:
            counts[answer.status] += 1
            if counts[answer.status] == 1:
                bodies.append(body)
        if answer.will_close:
            connection.close()
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.close()


def test_a_flood_of_offers_is_answered_with_words_while_another_user_looks_at_her_sessions(a_hub, alices_token):
    counts: Counter = Counter()
    bodies: list = []
    lock = threading.Lock()
    deadline = time.monotonic() + FLOOD_SECONDS
    flooders = [
        threading.Thread(target=_flood, args=(f"{a_hub.url}{OFFER_PATH}", deadline, counts, bodies, lock))
        for _ in range(CONNECTIONS)
    ]
    for flooder in flooders:
        flooder.start()
    waits = []
    while time.monotonic() < deadline:
        began = time.monotonic()
        status, _ = json_request("GET", f"{a_hub.url}/hub/api/dsportal/session", token=alices_token)
        waits.append(time.monotonic() - began)
        assert status == 200
        time.sleep(0.1)
    for flooder in flooders:
        flooder.join()
    sent = sum(counts.values())
    # numbers, not a timed assertion (a benchmark's): how fast the hub answered the flood, and alice meanwhile
    print(
        f"\nflood: {sent / FLOOD_SECONDS:.0f} offers/s over {CONNECTIONS} connections {dict(counts)}; "
        f"alice's looks: median {statistics.median(waits) * 1000:.0f} ms, most {max(waits) * 1000:.0f} ms"
    )
    # the address's burst answered with words, the rest of the flood late with a 429 and words
    assert counts[424] >= 10 and set(counts) <= {424, 429}, counts
    assert counts[429] <= CONNECTIONS * FLOOD_SECONDS, counts  # each connection answered late: ~1 a second
    assert all(b"No session is running" in body or b"Too many requests" in body for body in bodies), bodies


def test_a_method_tornado_refuses_before_the_handler_gets_a_short_json_answer(a_hub):
    status, body, headers = raw_request("PROPFIND", f"{a_hub.url}/user/bob/s2/x", {})
    assert status == 405 and headers["content-type"].startswith("application/json"), (status, headers)
    assert json.loads(body) == {"status": 405, "message": "Method Not Allowed"}  # not JupyterHub's HTML page


def test_a_flood_of_posts_leaves_the_redirect_into_the_hub_to_everyone_behind_the_same_address(a_hub):
    with ThreadPoolExecutor(32) as pool:  # past the address's burst (150) for these paths
        answers = list(pool.map(lambda _: raw_request("POST", f"{a_hub.url}{OFFER_PATH}", {}), range(200)))
    assert 429 in {answer[0] for answer in answers}
    assert raw_request("GET", f"{a_hub.url}/user/bob/s2/lab", {})[0] == 302
    assert raw_request("GET", f"{a_hub.url}/", {})[0] == 302  # the portal's front page: into /hub/
