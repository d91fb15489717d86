"""Small helpers the tests share: one JSON request, waiting for a condition, a free port, a fake JupyterLab."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlparse

# one TLS context for every request (a new one per request read the machine's whole trust store each time: CPU
# that the soak's timed requests counted as waiting on the hub, on a machine its sessions keep busy)
TLS = ssl.create_default_context()


def json_request(
    method: str,
    url: str,
    body=None,
    token: str | None = None,
    raw: bytes | None = None,
    timeout: float = 30,
    headers: dict | None = None,
) -> tuple[int, dict | list | str]:
    """(status, parsed JSON body, or the text when it is not JSON); HTTP errors are answers, not exceptions."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": "application/json", **(headers or {})}
    if token:
        headers["Authorization"] = f"token {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=TLS) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text) if text else {}
    except json.JSONDecodeError:
        return status, text


def wait_until(predicate, timeout: float = 20.0, what: str = "condition", every: float = 0.1):
    """The first truthy value of predicate(), polled until `timeout` seconds; else an AssertionError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what} not reached within {timeout} s")


def answers(url: str, proc=None, what: str = "the server") -> bool:
    """Whether `url` answers 200 now; an AssertionError if `proc` (a Popen serving it) has exited."""
    assert proc is None or proc.poll() is None, f"{what} exited"
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def raw_request(
    method: str, url: str, headers: dict[str, str], chunks: list[bytes] = (), timeout: float = 10
) -> tuple[int, str, dict[str, str]] | str:
    """A request over a bare socket: (status, body, headers by lower-case name), or "cut off" when the server closed on the body,
    or "no answer" when it waited (for a body it meant to read) past `timeout`.

    urllib sends a whole body before it reads a response, so a server that answers early and closes (as it
    should for a body it refuses) makes urllib fail at random with a broken pipe.
    """
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}"] + [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for chunk in chunks:
                sock.sendall(chunk)
            response = http.client.HTTPResponse(sock)  # skips an interim "100 Continue"
            response.begin()
            return (
                response.status,
                response.read().decode(errors="replace"),
                {k.lower(): v for k, v in response.getheaders()},
            )
        except TimeoutError:
            return "no answer"
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            return "cut off"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeJupyter:
    """Answers every GET with 200, and the hub's readiness check with the proof for `token` while `loaded`."""

    def __init__(self, token: str):
        from spawner.contract import READY_PATH, readiness_proof

        self.token = token
        self.loaded = threading.Event()
        self.loaded.set()
        self.asked: list[str] = []  # the readiness checks it received
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlparse(self.path)
                if url.path.endswith("/" + READY_PATH):
                    fake.asked.append(self.path)
                    if not fake.loaded.is_set():
                        self.close_connection = True  # hang up without an answer: still loading
                        return
                    nonce = parse_qs(url.query).get("nonce", [""])[0]
                    body = json.dumps({"proof": readiness_proof(fake.token, nonce)}).encode()
                else:
                    body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
