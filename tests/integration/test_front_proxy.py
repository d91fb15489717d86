"""The shipped nginx example (deploy/nginx/dsportal.conf) in front of the dev cluster: a login page, the redirect to
HTTPS, a session's kernel over a WebSocket (the client addresses it hands the hub, and its Secure cookies:
tests/component/test_front_proxy_addresses.py, behind a hub with hub.behind_tls_proxy).

The example is run as written but for what differs here: its names (localhost for portal.example.org), its ports
(8443, 8080: 443 and 80 are not the tests'), its certificate (the dev CA's) and its upstream's scheme: the dev
cluster's proxy serves HTTPS on 8000 where a site's, behind nginx, serves plain HTTP (hub.behind_tls_proxy)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tests.support import cluster as cluster_module
from tests.support import jupyter
from tests.support.jupyter import run_code
from tests.support.nginx import EXAMPLE, rendered, running_nginx

CERT, KEY = "/etc/dsportal/tls/portal.crt", "/etc/dsportal/tls/portal.key"
FRONT = "https://localhost:8443"


def front_url(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 2 and parts[1] == "user" and parts[2]:
        return f"https://{parts[2]}.localhost:8443{path}"
    return f"{FRONT}{path}"


@pytest.fixture
def nginx():
    # its upstream's scheme is the dev cluster's proxy's, HTTPS, where a site's behind nginx serves plain HTTP
    site = rendered(EXAMPLE.read_text(), 8080, 8443, CERT, KEY, "https://127.0.0.1:8000")
    with running_nginx(site, 8443) as folder:
        yield folder


def test_the_nginx_example_carries_the_login_page_sessions_and_websockets(cluster, nginx, monkeypatch):
    with urllib.request.urlopen(f"{FRONT}/hub/login", timeout=30) as page:
        assert page.status == 200 and "DS Portal" in page.read().decode()
    # plain HTTP is sent to HTTPS, on the name asked
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as moved:
        opener.open("http://localhost:8080/hub/login", timeout=30)
    assert moved.value.code == 301 and moved.value.headers["Location"] == "https://localhost/hub/login"

    # a session, then its kernel through nginx: the API over HTTPS and the kernel's channels over a WebSocket
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    monkeypatch.setattr(cluster_module, "url_for", front_url)
    monkeypatch.setattr(jupyter, "url_for", front_url)
    assert run_code(cluster, "alice", "python3", "print(6 * 7)") == ("ok", "42\n")
    access = (nginx / "access.log").read_text()
    assert "/user/alice/api/kernels/" in access and "/channels" in access  # it went through nginx
    cluster.stop("alice")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None
