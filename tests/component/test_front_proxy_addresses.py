"""Behind the shipped nginx example (deploy/nginx/dsportal.conf, as written: its upstream plain HTTP) and a hub with
hub.behind_tls_proxy: the login throttle counts each browser's own address, never one it forged nor nginx's, and the
hub's cookies are Secure though its proxy tells it "http" (a real nginx, a real hub with its proxy and the portal's
LDAP login against a real slapd, the mock Slurm).

The browser connects from 127.0.0.2, an address of this machine that is none of the hub's proxies: what the hub
logs for a failed login is the address the throttle counted."""

from __future__ import annotations

import http.client
import re
import ssl
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from tests.support.http import free_port
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.nginx import EXAMPLE, rendered, running_nginx
from tests.support.slapd import ldap_settings

BROWSER = "127.0.0.2"


@pytest.fixture
def behind_nginx(tmp_path, a_slapd):
    cert, key = tmp_path / "portal.crt", tmp_path / "portal.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    portal = config_data(MockSlurm(tmp_path / "mockslurm"))
    portal["ldap"] = ldap_settings(a_slapd)
    portal["hub"] = {**portal.get("hub", {}), "behind_tls_proxy": True}
    hub = HubProcess(tmp_path, portal, ldap=True)
    hub.start()
    try:
        https_port = free_port()
        site = rendered(
            EXAMPLE.read_text(), free_port(), https_port, str(cert), str(key), f"http://127.0.0.1:{hub.port}"
        )
        with running_nginx(site, https_port):
            yield hub, https_port, cert
    finally:
        hub.stop()


def browse(port: int, cert: Path, method: str, path: str, body: str = "", headers: dict | None = None):
    """One request from BROWSER's address over nginx's HTTPS: (status, headers, text)."""
    context = ssl.create_default_context(cafile=str(cert))
    conn = http.client.HTTPSConnection("localhost", port, source_address=(BROWSER, 0), context=context, timeout=30)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.getheaders(), answer.read().decode(errors="replace")
    finally:
        conn.close()


def test_behind_nginx_the_throttle_counts_each_browser_and_the_cookies_are_secure(behind_nginx):
    hub, port, cert = behind_nginx
    status, headers, page = browse(port, cert, "GET", "/hub/login")
    assert status == 200, page
    cookies = [value for name, value in headers if name.lower() == "set-cookie"]
    attributes = [{part.strip().lower() for part in c.split(";")[1:]} for c in cookies]
    assert cookies and all("secure" in each for each in attributes), cookies  # the browser's side is HTTPS
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    jar = "; ".join(c.split(";", 1)[0] for c in cookies)
    form = urllib.parse.urlencode({"_xsrf": xsrf, "username": "alice", "password": "not-alices"})
    status, _, _ = browse(
        port,
        cert,
        "POST",
        "/hub/login",
        form,
        {"Content-Type": "application/x-www-form-urlencoded", "Cookie": jar, "X-Forwarded-For": "203.0.113.9"},
    )
    assert status == 403
    said = hub.log.read_text()
    # the browser's own address: not the one it forged, not nginx's (127.0.0.1), which every browser would share
    assert f"Login failed for alice from {BROWSER}" in said and "203.0.113.9" not in said, said[-3000:]

    # past nginx, straight to the portal's proxy from an address that is no proxy's: itself, whatever it wrote
    direct = http.client.HTTPConnection("127.0.0.1", hub.port, source_address=("127.0.0.3", 0), timeout=30)
    try:
        direct.request("GET", "/hub/login")
        answer = direct.getresponse()
        page, jar = (
            answer.read().decode(),
            "; ".join(c.split(";", 1)[0] for name, c in answer.getheaders() if name.lower() == "set-cookie"),
        )
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode({"_xsrf": xsrf, "username": "bob", "password": "not-bobs"})
        direct.request("POST", "/hub/login", body=form, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Cookie": jar, "X-Forwarded-For": "203.0.113.7"})  # fmt: skip
        assert direct.getresponse().status == 403
    finally:
        direct.close()
    said = hub.log.read_text()
    assert "Login failed for bob from 127.0.0.3" in said and "203.0.113.7" not in said, said[-3000:]
