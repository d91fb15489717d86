"""DS Portal's spawner in a site's own JupyterHub (deploy/jupyterhub_config.site-example.py): the site's
authenticator logs people in, the portal's sessions start, and c.Spawner.environment reaches the job (a real hub
and proxy, the mock Slurm).

The site example names PAM; the test puts JupyterHub's stock DummyAuthenticator in its place (PAM would need
passwords for the test's accounts), after the example's lines, as a site's own lines would come."""

from __future__ import annotations

from pathlib import Path

from tests.support.http import wait_until
from tests.support.hub import FormBrowser, HubProcess
from tests.support.mockslurm import MockSlurm, config_data

ROOT = Path(__file__).resolve().parents[2]
SITE_EXAMPLE = ROOT / "deploy" / "jupyterhub_config.site-example.py"
SITES_OWN = """
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "the-sites-password"
c.Authenticator.allowed_users = {"alice", "bob"}
c.Spawner.environment = {"TEAM": "vision", "not a name": "x"}
"""


def test_a_sites_own_hub_logs_in_with_its_authenticator_and_starts_the_portals_sessions(tmp_path):
    mock = MockSlurm(tmp_path / "mockslurm")
    portal = {**config_data(mock), "ldap": {"enabled": False}}  # no directory settings at all
    hub = HubProcess(tmp_path, portal, ldap=True, after=SITES_OWN, deploy=SITE_EXAMPLE)
    hub.start()
    try:
        assert FormBrowser(hub.url).login("alice", "the-sites-password")[0] == 302  # logged in: sent on
        assert FormBrowser(hub.url).login("alice", "not-it")[0] == 403
        log = hub.log.read_text()
        assert "Using Authenticator: jupyterhub.auth.DummyAuthenticator" in log
        assert "Using Spawner: spawner.hub.session.spawner.SlurmGPUSpawner" in log

        assert hub.api("POST", "/users/alice/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
        wait_until(lambda: mock.calls("sbatch"), what="the session's job submitted")
        script = mock.calls("sbatch")[-1]["script"]
        assert "export TEAM=vision\n" in script and "not a name" not in script  # the site's variable alone
        wait_until(lambda: "c.Spawner.environment's 'not a name' is not set in alice's session" in hub.log.read_text(),
                   what="the key left out, in words")  # fmt: skip
        assert "routes are not installed" not in hub.log.read_text()
        assert hub.api("DELETE", "/users/alice/server")[0] in (202, 204)
    finally:
        hub.stop()
