"""The shipped nginx example (deploy/nginx/dsportal.conf) run by the tests: rendered with a test's names, ports,
certificate and upstream, then served by a real nginx of its own (its pid, logs and temporary files in a folder of
its own), in front of the dev cluster (tests/integration/test_front_proxy.py) or a test's own hub
(tests/component/test_front_proxy_addresses.py)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "nginx" / "dsportal.conf"
TEMPS = ("body", "proxy", "fastcgi", "uwsgi", "scgi")


def rendered(example: str, http_port: int, https_port: int, cert: str, key: str, upstream: str) -> str:
    """The example with the names localhost and *.localhost, the loopback's ports, the certificate and the upstream
    (pure): every other directive as shipped.  A line the example no longer has fails, naming it."""
    swaps = {
        "*.portal.example.org": "*.localhost",
        "portal.example.org": "localhost",
        "listen 80 default_server;": f"listen 127.0.0.1:{http_port} default_server;",
        "listen [::]:80 default_server;": "",
        "listen 443 ssl http2 default_server;": f"listen 127.0.0.1:{https_port} ssl http2 default_server;",
        "listen [::]:443 ssl http2 default_server;": "",
        "listen 80;": f"listen 127.0.0.1:{http_port};",
        "listen [::]:80;": "",
        "listen 443 ssl http2;": f"listen 127.0.0.1:{https_port} ssl http2;",
        "listen [::]:443 ssl http2;": "",
        "/etc/ssl/dsportal/portal.crt": cert,
        "/etc/ssl/dsportal/portal.key": key,
        "proxy_pass http://127.0.0.1:8000;": f"proxy_pass {upstream};",
    }
    for old, new in swaps.items():
        assert old in example, f"the example no longer has {old!r}: update tests/support/nginx.py with it"
        example = example.replace(old, new)
    return example


@contextmanager
def running_nginx(site: str, https_port: int) -> Iterator[Path]:
    """nginx serving `site` (a rendered example) until the block ends; yields its folder (access.log, error.log)."""
    folder = Path(tempfile.mkdtemp(prefix="dsportal-nginx-"))
    for temp in TEMPS:
        (folder / temp).mkdir()
        shutil.chown(folder / temp, "www-data", "www-data")
    (folder / "site.conf").write_text(site)
    (folder / "nginx.conf").write_text(
        f"user www-data;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log {folder}/access.log;\n"
        + "".join(f"  {'client_body' if t == 'body' else t}_temp_path {folder}/{t};\n" for t in TEMPS)
        + f"  include {folder}/site.conf;\n}}\n"
    )
    conf = ["nginx", "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
    checked = subprocess.run([*conf, "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    server = subprocess.Popen([*conf, "-g", "daemon off;"])
    try:
        deadline = time.monotonic() + 20
        while not subprocess.run(["ss", "-Hltn", f"sport = :{https_port}"], capture_output=True, text=True).stdout:
            assert server.poll() is None and time.monotonic() < deadline, (folder / "error.log").read_text()
            time.sleep(0.1)  # a wait on nginx's listener, with a deadline
        yield folder
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(folder)
