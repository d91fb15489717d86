"""A refused request reaches the client as the refusal through the dev cluster's proxy (HTTPS, port 8000).

The attack: a 30 MB body to a portal API with a user's token, sent whole before the answer is read (as
urllib and requests send it).  The hub answered 413 in 13 ms and closed the connection while the proxy was
still sending; the proxy met a reset and answered 503 with its own page (portal/refusedbody.py).
"""

from __future__ import annotations

import http.client
import json
import ssl

from tests.support.jobs import JobsClient

MiB = 1024 * 1024


def post_whole(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    """POST through the proxy, the body sent whole before the answer is read."""
    connection = http.client.HTTPSConnection("localhost", 8000, timeout=60, context=ssl.create_default_context())
    try:
        connection.request("POST", path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode(errors="replace")
    finally:
        connection.close()


def test_a_30_mb_body_to_an_api_is_answered_413_with_its_words_through_the_proxy():
    token = JobsClient.for_user("alice").token
    body = b'{"path": "' + b"x" * (30 * MiB) + b'"}'
    for _ in range(3):
        status, text = post_whole(
            "/hub/api/dsportal/jobs", {"Authorization": f"token {token}", "Content-Type": "application/json"}, body
        )
        assert status == 413, (status, text[:300])
        message = json.loads(text)["message"]
        assert message.startswith(f"This request's body is {len(body)} bytes; the portal takes at most"), message


def test_a_30_mb_login_form_is_answered_413_with_its_words_through_the_proxy():
    form = b"username=alice&password=" + b"x" * (30 * MiB)
    status, text = post_whole("/hub/login", {"Content-Type": "application/x-www-form-urlencoded"}, form)
    assert status == 413 and "The login form was too large." in text, (status, text[:300])
