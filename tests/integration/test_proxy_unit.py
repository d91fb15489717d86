"""The shipped proxy unit's command as a site runs it: `dsportal proxy` as the hub's service account, serving HTTPS
with the config's certificate, on port 443 with deploy/systemd/port-443.conf's one capability and not without.

systemd is not PID 1 here: setpriv gives the process what the unit and its drop-in give it (the account, the
ambient capability, nothing else in its bounding set, no new privileges).  It runs on node003, a host of its own
(deploy/dev/hosts.py), whose port 443 and loopback are its own: the dev cluster's proxy is not disturbed."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from deploy.dev.common import ETC, STATE, VENV
from deploy.dev.tls import CA_CERT
from tests.support.hosts import on_node

ROOT = Path(__file__).resolve().parents[2]
CAPS = ["--inh-caps=+net_bind_service", "--ambient-caps=+net_bind_service", "--bounding-set=-all,+net_bind_service"]


def serve_and_connect(config: Path, caps: list[str]) -> subprocess.CompletedProcess:
    """`dsportal proxy` as dsportal on node003 (with `caps`), a TLS handshake with it at 127.0.0.1:443, then stop."""
    proxy = [
        "setpriv", "--reuid=dsportal", "--regid=dsportal", "--init-groups", *caps, "--no-new-privs",
        "env", "-i", "CONFIGPROXY_AUTH_TOKEN=unit-test", f"DSPORTAL_CONFIG={config}", "PATH=/usr/local/bin:/usr/bin:/bin",
        str(VENV / "bin" / "dsportal"), "proxy",
    ]  # fmt: skip
    script = (
        '"$@" > /tmp/proxy-unit.log 2>&1 & pid=$!\n'
        "for i in $(seq 50); do ss -Hltn 'sport = :443' | grep -q . && break; kill -0 $pid 2>/dev/null || break; sleep 0.2; done\n"
        f"openssl s_client -connect 127.0.0.1:443 -CAfile {CA_CERT} -brief </dev/null 2>&1 | head -20\n"
        "kill $pid 2>/dev/null; wait $pid; echo exit=$?; cat /tmp/proxy-unit.log\n"
    )
    return subprocess.run(
        on_node("node003", ["sh", "-c", script, "sh", *proxy]), capture_output=True, text=True, timeout=60
    )


def test_the_proxy_unit_serves_https_on_443_with_its_drop_in_and_not_without():
    site = yaml.safe_load((ETC / "portal.yaml").read_text())
    site["hub"]["bind_url"] = "https://127.0.0.1:443"  # the port a site's users type nothing for
    site["hub"]["proxy_api_url"] = "http://127.0.0.1:8101"
    folder = Path(tempfile.mkdtemp(dir=STATE.parent))  # root's; dsportal reads the config through it
    try:
        folder.chmod(0o755)
        config = folder / "portal.yaml"
        config.write_text(yaml.safe_dump(site))
        config.chmod(0o644)
        served = serve_and_connect(config, CAPS)
        assert "CONNECTION ESTABLISHED" in served.stdout and "Verification: OK" in served.stdout, served
        refused = serve_and_connect(config, [])
        assert "CONNECTION ESTABLISHED" not in refused.stdout, refused
        assert "EACCES" in refused.stdout and "443" in refused.stdout, refused  # the proxy's own words
    finally:
        shutil.rmtree(folder)
