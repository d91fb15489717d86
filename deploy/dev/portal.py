"""The portal's side of the dev cluster: /etc/dsportal (admin YAML, JupyterHub's config and dev additions, secrets).

Secrets are created 0600 (os.open with the mode; never widened, never
chmod-ed after writing) and owned by whoever reads them: the hub's service
account for what its config reads, root for what supervisord hands over as
environment (the crypt key, the proxy's token).
"""

from __future__ import annotations

import secrets
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from .common import ETC, HUB_STATE, HUB_URL, SERVICE_USER, STATE, VENV, ClusterError, run, say, write_if_changed
from .hosts import HEAD_ADDRESS
from .tls import CERT, KEY

HERE = Path(__file__).resolve().parent.parent  # deploy/
ADMIN_TOKEN = ETC / "admin.token"  # read by the hub's config: the service account's
CRYPT_KEY = ETC / "crypt.key"  # root's: supervisord passes it as JUPYTERHUB_CRYPT_KEY
PROXY_TOKEN = ETC / "proxy.token"  # root's: supervisord passes it as CONFIGPROXY_AUTH_TOKEN
LDAP_PASSWORD = ETC / "ldap-service.pw"  # the service account's: ldap.service_password_file

HUB_CONFIG_D = ETC / "jupyterhub_config.d"  # what ETC / "jupyterhub_config.py" (the shipped one) loads last
HUB_DEV_SETTINGS = HUB_CONFIG_D / "devcluster.py"


def hub_dev_settings(admin_token: Path = ADMIN_TOKEN) -> str:
    """The dev cluster's additions to the hub's config: a JupyterHub config file of their own."""
    return f"""\
# The dev cluster's additions to JupyterHub's config, written by `deploy/devcluster up` (deploy/dev/portal.py).
from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub)
# an admin for scripts and the integration tests: `deploy/devcluster token` prints its token
token = Path({str(admin_token)!r}).read_text().strip()
c.JupyterHub.services.append({{"name": "devcluster-admin", "api_token": token}})
c.JupyterHub.load_roles.append({{"name": "admin", "services": ["devcluster-admin"]}})
c.Spawner.poll_interval = 10
"""


def ensure_secret(path: Path, owner: str) -> None:
    if not path.exists():
        write_if_changed(path, secrets.token_hex(32), mode=0o600, owner=owner)
    path.chmod(0o600)
    shutil.chown(path, owner, owner)


def ensure_portal_config() -> bool:
    """Write /etc/dsportal; True if anything the hub reads changed."""
    ETC.mkdir(mode=0o755, exist_ok=True)
    changed = write_if_changed(ETC / "portal.yaml", (HERE / "portal.dev.yaml").read_text())
    if changed:
        say(f"wrote {ETC / 'portal.yaml'} from deploy/portal.dev.yaml")
    check = run([str(VENV / "bin" / "dsportal"), "check-config", str(ETC / "portal.yaml")], check=False)
    if check.returncode != 0:
        raise ClusterError(f"{ETC / 'portal.yaml'} is invalid:\n{check.stdout}")
    ensure_secret(ADMIN_TOKEN, SERVICE_USER)
    ensure_secret(CRYPT_KEY, "root")
    ensure_secret(PROXY_TOKEN, "root")
    changed |= write_if_changed(
        LDAP_PASSWORD, (STATE / "slapd" / "service.pw").read_text(), mode=0o600, owner=SERVICE_USER
    )
    # the shipped config as an admin installs it, and the dev additions in the folder it loads (read by the hub's
    # account: the folder is made 0755 whatever root's umask)
    changed |= write_if_changed(ETC / "jupyterhub_config.py", (HERE / "jupyterhub_config.py").read_text())
    HUB_CONFIG_D.mkdir(mode=0o755, exist_ok=True)
    HUB_CONFIG_D.chmod(0o755)
    return write_if_changed(HUB_DEV_SETTINGS, hub_dev_settings()) or changed


def proxy_environment() -> dict[str, str]:
    """The proxy's: its token, and the config `dsportal proxy` reads (as the shipped unit sets them)."""
    return {
        "CONFIGPROXY_AUTH_TOKEN": PROXY_TOKEN.read_text().strip(),
        "DSPORTAL_CONFIG": str(ETC / "portal.yaml"),
        "HOME": str(HUB_STATE),
        "PATH": "/usr/local/bin:/usr/bin:/bin",  # systemd's, where the proxy's link is
    }


PROXY_COMMAND = [str(VENV / "bin" / "dsportal"), "proxy"]  # deploy/systemd/dsportal-proxy.service's ExecStart


def hub_environment() -> dict[str, str]:
    return {
        "DSPORTAL_CONFIG": str(ETC / "portal.yaml"),
        "JUPYTERHUB_CRYPT_KEY": CRYPT_KEY.read_text().strip(),
        **proxy_environment(),
        "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    }


def proxy_argv(chp: str | None = None) -> list[str]:
    """What the proxy `dsportal proxy` starts shows (the supervisor finds it by this, also without its supervisord):
    HTTPS on 8000 with the dev CA's certificate, routing by host name (one origin per user).  Built here with the
    standard library alone (the portal's environment may not be there yet); a unit test holds it equal to what
    `dsportal proxy` makes of deploy/portal.dev.yaml."""
    chp = chp or shutil.which("configurable-http-proxy")
    if chp is None:
        raise ClusterError("configurable-http-proxy is not installed; run `deploy/devcluster up` to install it.")
    return [
        chp,
        "--ip",
        "127.0.0.1",
        "--port",
        "8000",
        "--api-ip",
        "127.0.0.1",
        "--api-port",
        "8001",
        "--ssl-cert",
        str(CERT),
        "--ssl-key",
        str(KEY),
        "--host-routing",
        "--default-target",
        f"http://{HEAD_ADDRESS}:8081",
        "--error-target",
        f"http://{HEAD_ADDRESS}:8081/hub/error",
    ]


def hub_answers() -> bool:
    try:  # through the proxy, over HTTPS: the dev CA is in the system's trust store
        with urllib.request.urlopen(f"{HUB_URL}/hub/api/", timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False
