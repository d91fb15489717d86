"""A real JupyterHub (with configurable-http-proxy) on loopback ports, using the mock Slurm.

Its config runs deploy/jupyterhub_config.py on a test portal.yaml, then adds
what tests need: an API token for a `tests` service, users alice and bob, and
fake unix accounts (the spawner's getpwnam seam) with homes in a temp folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from tests.support.demo import USERS, uid_of
from tests.support.http import free_port, json_request
from tests.support.mockslurm import MockSlurm, config_data

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "tests-service-token-0123456789abcdef"

HUB_CONFIG = """\
import pwd
c = get_config()
{before}
exec(compile(open({deploy!r}).read(), "jupyterhub_config.py", "exec"))

from spawner.hub.session.spawner import SlurmGPUSpawner

def _fake_account(name):
    uid = {uids!r}.get(name, 5009)  # the demo directory's uidNumbers
    return pwd.struct_passwd((name, "x", uid, uid, name, {homes!r} + "/" + name, "/bin/bash"))

SlurmGPUSpawner.getpwnam = staticmethod(_fake_account)
{authenticator}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.JupyterHub.services = [{{"name": "tests", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "tests", "scopes": ["admin:users", "admin:servers", "tokens"], "services": ["tests"]}}]
c.JupyterHub.log_level = "DEBUG"
{after}
"""


# Tests of the spawner need users, not passwords; the LDAP tests keep the portal's authenticator.
DUMMY_AUTH = """c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {"alice", "bob"}
"""


class HubProcess:
    def __init__(
        self,
        root: Path,
        portal: dict,
        ldap: bool = False,
        before: str = "",
        after: str = "",
        deploy: Path = ROOT / "deploy" / "jupyterhub_config.py",
    ):
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        hub_port = free_port()
        self.hub_api = f"http://127.0.0.1:{hub_port}/hub/api"
        homes = root / "homes"
        for user in ("alice", "bob"):
            (homes / user).mkdir(parents=True, exist_ok=True)
        portal = {
            **portal,
            "hub": {
                **portal.get("hub", {}),
                "bind_url": self.url,
                "internal_bind_url": f"http://127.0.0.1:{hub_port}",
                "data_dir": str(root / "state"),
            },
        }
        self.portal_yaml = root / "portal.yaml"
        self.portal_yaml.write_text(yaml.safe_dump(portal))
        self.config = root / "jupyterhub_config.py"
        self.config.write_text(
            HUB_CONFIG.format(
                deploy=str(deploy),
                homes=str(homes),
                uids={name: uid_of(name) for name in USERS},
                proxy_api_port=free_port(),
                token=ADMIN_TOKEN,
                authenticator="" if ldap else DUMMY_AUTH,
                before=before,
                after=after,
            )
        )
        self.log = root / "hub.log"
        self.crypt_key = "ab" * 32  # JUPYTERHUB_CRYPT_KEY: encrypts auth_state (a test may change it before start)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        env = {**os.environ, "DSPORTAL_CONFIG": str(self.portal_yaml), "JUPYTERHUB_CRYPT_KEY": self.crypt_key}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(self.config)],
            cwd=self.root,
            env=env,
            stdout=open(self.log, "ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterHub exited ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}")
            try:
                if self.api("GET", "/")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"JupyterHub did not answer in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def request(
        self, method: str, url: str, body=None, token: str | None = ADMIN_TOKEN, raw: bytes | None = None
    ) -> tuple[int, dict | str]:
        return json_request(method, url, body, token=token, raw=raw)

    def api(self, method: str, path: str, body=None, **kw) -> tuple[int, dict | str]:
        """Through the proxy on the public port, as users' scripts do."""
        return self.request(method, f"{self.url}/hub/api{path}", body, **kw)


@contextmanager
def hub_with_mock_slurm(root: Path, after: str = "") -> Iterator[tuple[HubProcess, MockSlurm]]:
    """A real JupyterHub + proxy on loopback in `root`, with the portal config and a mock Slurm of its own;
    `after`: lines of jupyterhub_config.py after the portal's (a test's seam).  Stopped on leaving."""
    mock = MockSlurm(root / "mockslurm")
    hub = HubProcess(root, config_data(mock), after=after)
    hub.start()
    try:
        yield hub, mock
    finally:
        hub.stop()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class FormBrowser:
    """Cookies and no redirects, as a browser on the hub's pages without script: log in, then ask for pages."""

    def __init__(self, base_url: str, timeout: float = 60):
        import http.cookiejar

        self.base_url = base_url
        self.timeout = timeout
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect
        )

    def get(self, path: str) -> tuple[int, str, str]:
        """(status, page, redirect location)."""
        try:
            with self.opener.open(f"{self.base_url}{path}", timeout=self.timeout) as r:
                return r.status, r.read().decode(), ""
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers.get("Location", "")

    def post_form(self, path: str, fields: dict[str, str]) -> tuple[int, str, str]:
        """Submit the form of the page at `path` as a browser does (with the page's XSRF token)."""
        import html
        import re
        from urllib.parse import urlencode

        page = self.get(path)[1]
        action = html.unescape(re.search(r'<form[^>]*action="([^"]+)"', page).group(1))
        request = urllib.request.Request(
            urllib.parse.urljoin(f"{self.base_url}{path}", action), data=urlencode(fields).encode()
        )
        try:
            with self.opener.open(request, timeout=self.timeout) as r:
                return r.status, r.read().decode(), ""
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers.get("Location", "")

    def login(self, username: str, password: str) -> tuple[int, str, str]:
        import re
        from urllib.parse import urlencode

        page = self.opener.open(f"{self.base_url}/hub/login", timeout=self.timeout).read().decode()
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
        data = urlencode({"_xsrf": xsrf, "username": username, "password": password}).encode()
        try:
            with self.opener.open(
                urllib.request.Request(f"{self.base_url}/hub/login", data=data), timeout=self.timeout
            ) as r:
                return r.status, r.read().decode(), ""
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers.get("Location", "")


def form_login(base_url: str, username: str, password: str, timeout: float = 60) -> tuple[int, str, str]:
    """Log in through the login form as a browser does; (status, page, redirect location)."""
    return FormBrowser(base_url, timeout).login(username, password)
