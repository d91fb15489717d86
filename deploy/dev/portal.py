"""The portal's side of the dev cluster: /etc/dsportal (admin YAML, JupyterHub config, secrets)."""

from __future__ import annotations

import secrets
import urllib.error
import urllib.request
from pathlib import Path

from .common import ETC, HUB_URL, STATE, VENV, ClusterError, run, say, write_if_changed

HERE = Path(__file__).resolve().parent.parent  # deploy/
ADMIN_TOKEN = ETC / "admin.token"
CRYPT_KEY = ETC / "crypt.key"

HUB_DEV_SETTINGS = f"""
# --- dev cluster additions (deploy/devcluster) ---
c.JupyterHub.services = [{{"name": "devcluster-admin", "api_token": open("{ADMIN_TOKEN}").read().strip()}}]
c.JupyterHub.load_roles = [{{"name": "admin", "services": ["devcluster-admin"]}}]
c.ConfigurableHTTPProxy.pid_file = "{STATE}/jupyterhub-proxy.pid"
c.Spawner.poll_interval = 10
"""


def ensure_portal_config() -> bool:
    """Write /etc/dsportal; True if anything the hub reads changed."""
    ETC.mkdir(mode=0o755, exist_ok=True)
    changed = write_if_changed(ETC / "portal.yaml", (HERE / "portal.dev.yaml").read_text())
    if changed:
        say(f"wrote {ETC / 'portal.yaml'} from deploy/portal.dev.yaml")
    check = run([str(VENV / "bin" / "dsportal"), "check-config", str(ETC / "portal.yaml")], check=False)
    if check.returncode != 0:
        raise ClusterError(f"{ETC / 'portal.yaml'} is invalid:\n{check.stdout}")
    for secret in (ADMIN_TOKEN, CRYPT_KEY):
        if not secret.exists():
            write_if_changed(secret, secrets.token_hex(32), mode=0o600)
    config = (HERE / "jupyterhub_config.py").read_text()
    # the dev additions go before the final report_ignored_settings(c) line, which must stay last
    body, last = config.rstrip().rsplit("\n", 1)
    return write_if_changed(ETC / "jupyterhub_config.py", f"{body}\n{HUB_DEV_SETTINGS}\n{last}\n") or changed


def hub_environment() -> dict[str, str]:
    return {"DSPORTAL_CONFIG": str(ETC / "portal.yaml"), "JUPYTERHUB_CRYPT_KEY": CRYPT_KEY.read_text().strip(),
            "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


def hub_answers() -> bool:
    try:
        with urllib.request.urlopen(f"{HUB_URL}/hub/api/", timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False
