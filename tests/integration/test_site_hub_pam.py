"""DS Portal's spawner in a site's own JupyterHub with JupyterHub's stock PAMAuthenticator, as the site example
writes it (deploy/jupyterhub_config.site-example.py): the dev cluster's accounts log in through the machine's own
PAM (pam_unix), and the portal's session starts (a real hub and proxy, the mock Slurm).

An integration test for the accounts alone, which `deploy/devcluster up` makes (passwordless, locked).  For the
test's minutes, three of them get their directory passwords on the machine too, as a site's sssd would know them,
and are locked again after it (`passwords`): the demo passwords are public, and no one should `su` to a demo
account with them.  The hub runs as root here, as the tests do (docs: admins/own-hub says what a hub run as
`dsportal` needs for PAM)."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

import pytest

from deploy.dev.demo import USERS
from tests.support.http import wait_until
from tests.support.hub import FormBrowser, HubProcess
from tests.support.mockslurm import MockSlurm, config_data

ROOT = Path(__file__).resolve().parents[2]
SITE_EXAMPLE = ROOT / "deploy" / "jupyterhub_config.site-example.py"
SITES_OWN = """
c.Authenticator.allowed_users = {"alice", "bob"}
c.PAMAuthenticator.open_sessions = False  # no login session per hub request (JupyterHub's advice)
"""


PEOPLE = ("alice", "bob", "dave")


def password(name: str) -> str:
    return next(u.password for u in USERS if u.name == name)


@pytest.fixture
def passwords():
    """The three people's directory passwords for pam_unix (chpasswd reads them on stdin), locked again after."""
    for name in PEOPLE:  # the dev cluster's own accounts, never an account of that name made otherwise
        assert pwd.getpwnam(name).pw_uid == next(u.uid for u in USERS if u.name == name), name
    lines = "".join(f"{name}:{password(name)}\n" for name in PEOPLE)
    subprocess.run(["chpasswd"], input=lines, text=True, check=True, timeout=60)
    try:
        yield
    finally:
        for name in PEOPLE:
            subprocess.run(["usermod", "-p", "!", name], check=True, timeout=30)  # as useradd left it: locked


def test_a_sites_own_hub_logs_in_through_pam_and_starts_the_portals_session(tmp_path, passwords):
    mock = MockSlurm(tmp_path / "mockslurm")
    portal = {**config_data(mock), "ldap": {"enabled": False}}
    hub = HubProcess(tmp_path, portal, ldap=True, after=SITES_OWN, deploy=SITE_EXAMPLE)
    hub.start()
    try:
        log = hub.log.read_text()
        assert "Using Authenticator: jupyterhub.auth.PAMAuthenticator" in log, log[-3000:]
        alice = FormBrowser(hub.url)
        assert alice.login("alice", password("alice"))[0] == 302  # her unix password, through PAM
        assert FormBrowser(hub.url).login("alice", password("bob"))[0] == 403  # another's password
        refused = FormBrowser(hub.url).login("dave", password("dave"))  # PAM knows him; the site did not allow him
        assert refused[0] == 403, refused
        status, page, location = alice.post_form("/hub/spawn", {"partition": "sxm2", "gpus": "1", "hours": "1"})
        assert status == 302, (status, page[:1000])
        wait_until(lambda: mock.calls("sbatch"), what="alice's session job submitted")
        call = mock.calls("sbatch")[-1]
        assert call["env"]["USER"] == "alice" and "--gres=gpu:1" in call["argv"], call
        assert hub.api("DELETE", "/users/alice/server")[0] in (202, 204)
        wait_until(lambda: all(j["state"] == "CANCELLED" for j in mock.jobs().values()), what="the job cancelled")
    finally:
        hub.stop()
