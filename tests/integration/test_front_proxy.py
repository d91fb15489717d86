"""The shipped nginx example (deploy/nginx/dsportal.conf) in front of the dev cluster: a login page, the redirect to
HTTPS, a session's kernel over a WebSocket (the client addresses it hands the hub, and its Secure cookies:
tests/component/test_front_proxy_addresses.py, behind a hub with hub.behind_tls_proxy).

The example is run as written but for what differs here: its names (localhost for portal.example.org), its ports
(8443, 8080: 443 and 80 are not the tests'), its certificate (the dev CA's) and its upstream's scheme: the dev
cluster's proxy serves HTTPS on 8000 where a site's, behind nginx, serves plain HTTP (hub.behind_tls_proxy)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import cluster as cluster_module
from tests.support import jupyter
from tests.support.jupyter import run_code

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "nginx" / "dsportal.conf"
CERT, KEY = "/etc/dsportal/tls/portal.crt", "/etc/dsportal/tls/portal.key"
FRONT = "https://localhost:8443"


def rendered(example: str) -> str:
    """The example with this machine's names, ports, certificate and upstream scheme (pure)."""
    swaps = {
        "*.portal.example.org": "*.localhost",
        "portal.example.org": "localhost",
        "listen 80 default_server;": "listen 127.0.0.1:8080 default_server;",
        "listen [::]:80 default_server;": "",
        "listen 443 ssl http2 default_server;": "listen 127.0.0.1:8443 ssl http2 default_server;",
        "listen [::]:443 ssl http2 default_server;": "",
        "listen 80;": "listen 127.0.0.1:8080;",
        "listen [::]:80;": "",
        "listen 443 ssl http2;": "listen 127.0.0.1:8443 ssl http2;",
        "listen [::]:443 ssl http2;": "",
        "/etc/ssl/dsportal/portal.crt": CERT,
        "/etc/ssl/dsportal/portal.key": KEY,
        "proxy_pass http://127.0.0.1:8000;": "proxy_pass https://127.0.0.1:8000;",
    }
    for old, new in swaps.items():
        assert old in example, f"the example no longer has {old!r}: update this test with it"
        example = example.replace(old, new)
    return example


def front_url(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 2 and parts[1] == "user" and parts[2]:
        return f"https://{parts[2]}.localhost:8443{path}"
    return f"{FRONT}{path}"


@pytest.fixture
def nginx():
    folder = Path(tempfile.mkdtemp(prefix="dsportal-nginx-"))
    for temp in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / temp).mkdir()
        shutil.chown(folder / temp, "www-data", "www-data")
    (folder / "site.conf").write_text(rendered(EXAMPLE.read_text()))
    (folder / "nginx.conf").write_text(
        f"user www-data;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\n"
        "events {}\nhttp {\n"
        f"  access_log {folder}/access.log;\n"
        + "".join(f"  {t}_temp_path {folder}/{t};\n" for t in ("fastcgi", "uwsgi", "scgi"))
        + f"  client_body_temp_path {folder}/body;\n  proxy_temp_path {folder}/proxy;\n"
        f"  include {folder}/site.conf;\n}}\n"
    )
    conf = ["nginx", "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
    checked = subprocess.run([*conf, "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    server = subprocess.Popen([*conf, "-g", "daemon off;"])
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(["ss", "-Hltn", "sport = :8443"], capture_output=True, text=True).stdout.strip() == "":
            assert server.poll() is None and time.monotonic() < deadline, (folder / "error.log").read_text()
            time.sleep(0.1)
        yield folder
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(folder)


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
