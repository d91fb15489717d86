"""A refused request reaches the client as the refusal, through configurable-http-proxy (a real hub, mock Slurm).

The attack: a 30 MB body to a portal API.  The hub answered 413 in 13 ms but closed the connection while
the proxy was still sending the body; the proxy met a reset and answered 503 with its own page, so the
client never read the refusal's words (portal/refusedbody.py).  The login form: test_login_page.py.
"""

from __future__ import annotations

import json

import psutil

from tests.support.http import raw_request
from tests.support.hub import HubProcess

MiB = 1024 * 1024
USAGE = "/hub/api/dsportal/session/usage"


def through_the_proxy(hub: HubProcess, path: str, headers: dict[str, str], chunks: list[bytes]):
    """The answer to a request sent whole before it is read, as urllib or requests send it."""
    return raw_request("POST", hub.url + path, headers, chunks, timeout=60)


def user_token(hub: HubProcess, name: str) -> str:
    status, body = hub.api("POST", f"/users/{name}/tokens", {"note": "refusals", "expires_in": 3600})
    assert status in (200, 201), body
    return body["token"]


def assert_refused_with_words(answer, words: str) -> None:
    assert isinstance(answer, tuple), answer
    status, body, _ = answer
    assert (status, words in body) == (413, True), (status, body[:300])


def test_a_30_mb_body_to_an_api_gets_the_413_and_its_words(a_hub_and_its_slurm):
    hub = a_hub_and_its_slurm[0]
    token = user_token(hub, "alice")
    payload = b'{"gpus": "' + b"x" * (30 * MiB) + b'"}'
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    before = psutil.Process(hub.proc.pid).memory_info().rss
    for _ in range(3):
        answer = through_the_proxy(hub, USAGE, {**headers, "Content-Length": str(len(payload))}, [payload])
        assert_refused_with_words(answer, "the portal takes at most 65536 bytes here")
        assert json.loads(answer[1])["message"].startswith(f"This request's body is {len(payload)} bytes")
    grown = psutil.Process(hub.proc.pid).memory_info().rss - before
    assert grown < 10 * MiB, f"the hub kept the bodies it refused: {grown / MiB:.0f} MiB more"
    assert hub.api("GET", "/")[0] == 200


def test_a_chunked_body_that_grows_past_the_limit_gets_the_413_and_its_words(a_hub_and_its_slurm):
    hub = a_hub_and_its_slurm[0]
    piece = b"x" * MiB
    chunks = [f"{len(piece):x}\r\n".encode() + piece + b"\r\n"] * 30 + [b"0\r\n\r\n"]
    headers = {"Authorization": f"token {user_token(hub, 'alice')}", "Transfer-Encoding": "chunked"}
    assert_refused_with_words(through_the_proxy(hub, USAGE, headers, chunks), "body is over 65536 bytes")
