"""DS Portal's spawner in a site's own JupyterHub with JupyterHub's stock PAMAuthenticator, as the site example
writes it (deploy/jupyterhub_config.site-example.py): the dev cluster's accounts log in through the machine's own
PAM (pam_unix: `up` gives the demo people their directory passwords, as a site's sssd or pam_ldap would), and the
portal's session starts (a real hub and proxy, the mock Slurm).

An integration test for the accounts alone: PAM reads /etc/shadow, which only `deploy/devcluster up` fills.  The
hub runs as root here, as the tests do; a site's hub as `dsportal` needs the `shadow` group for PAM
(docs: admins/own-hub)."""

from __future__ import annotations

from pathlib import Path

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


def password(name: str) -> str:
    return next(u.password for u in USERS if u.name == name)


def test_a_sites_own_hub_logs_in_through_pam_and_starts_the_portals_session(tmp_path):
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
