"""A refused request reaches the client as the refusal through the dev cluster's proxy (HTTPS, port 8000).

The attack: a 30 MB body to a portal API with a user's token, sent whole before the answer is read (as
urllib and requests send it).  The hub answered 413 in 13 ms and closed the connection while the proxy was
still sending; the proxy met a reset and answered 503 with its own page (portal/refusedbody.py).
"""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess

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
            "/hub/api/dsportal/runs", {"Authorization": f"token {token}", "Content-Type": "application/json"}, body
        )
        assert status == 413, (status, text[:300])
        message = json.loads(text)["message"]
        assert message.startswith(f"This request's body is {len(body)} bytes; the portal takes at most"), message


def test_a_30_mb_login_form_is_answered_413_with_its_words_through_the_proxy():
    form = b"username=alice&password=" + b"x" * (30 * MiB)
    status, text = post_whole("/hub/login", {"Content-Type": "application/x-www-form-urlencoded"}, form)
    assert status == 413 and "The login form was too large." in text, (status, text[:300])


def test_a_30_mb_upload_from_curl_is_answered_413_with_its_words_through_the_proxy(tmp_path):
    """curl holds a large body back until it hears `100 Continue` (Expect: 100-continue); the proxy says it at
    once and sends the body on whatever the hub answers: the hub's early 413 met it as a reset, and the client
    got the proxy's 503 page."""
    token = JobsClient.for_user("alice").token
    body = tmp_path / "body.json"
    body.write_bytes(b'{"path": "' + b"x" * (30 * MiB) + b'"}')
    for path in ("/hub/api/dsportal/runs", "/hub/login"):
        answer = subprocess.run(
            ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", f"Authorization: token {token}"]
            + ["-H", "Content-Type: application/json", "--data-binary", f"@{body}", f"https://localhost:8000{path}"],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        text, status = answer.rsplit("\n", 1)
        assert status == "413", (path, status, text[:300])
        assert "too large" in text or "at most" in text, (path, text[:300])
