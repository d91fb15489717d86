"""Access follows the directory: a user taken out of the allowed group loses the portal at the next refresh."""

from __future__ import annotations

import pytest

from deploy.dev import directory
from tests.support.demo import password_of
from tests.support.http import wait_until
from tests.support.hub import FormBrowser, HubProcess
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.slapd import SUFFIX, ldap_settings


@pytest.fixture
def a_refreshing_hub(tmp_path, a_slapd):
    """A real hub with the portal's LDAP authenticator, looking accounts up again every second."""
    mock = MockSlurm(tmp_path / "mockslurm")
    portal = config_data(mock)
    portal["ldap"] = ldap_settings(
        a_slapd,
        allowed_groups=["datasci"],
        refresh_seconds=1,
        service_dn=f"cn=portal,ou=services,{SUFFIX}",
        service_password_file=str(a_slapd.service_password_file),
    )
    hub = HubProcess(tmp_path, portal, ldap=True)
    hub.start()
    yield hub, mock
    hub.stop()


def test_a_user_removed_from_the_allowed_group_loses_access_tokens_and_sessions(a_refreshing_hub, a_slapd):
    hub, mock = a_refreshing_hub
    bob = FormBrowser(hub.url)
    assert bob.login("bob", password_of("bob"))[0] == 302
    assert bob.get("/hub/home")[0] == 200
    status, token = hub.api("POST", "/users/bob/tokens", {"note": "a script of bob's"})
    assert status == 201, token
    assert hub.api("GET", "/user", token=token["token"])[0] == 200
    assert hub.api("POST", "/users/bob/server", {"gpus": 1})[0] in (201, 202)
    wait_until(lambda: mock.jobs(), what="bob's job submitted")
    [job_id] = mock.jobs()

    directory.set_member(a_slapd.folder, a_slapd.uri, "datasci", "bob", member=False)
    try:
        # the next request after a second is looked up again: bob is sent to the login page
        wait_until(lambda: bob.get("/hub/home")[2].startswith("/hub/login"), 20, "bob sent to the login page")
        assert hub.api("GET", "/user", token=token["token"])[0] == 403  # his token is refused too
        wait_until(lambda: mock.jobs()[job_id]["state"] == "CANCELLED", 20, "bob's job cancelled")
        assert [c["user"] for c in mock.calls("scancel")] == ["bob"]
        assert "bob lost access to the portal: in none of the allowed groups" in hub.log.read_text()
        assert bob.login("bob", password_of("bob"))[0] == 403  # and cannot log in again
    finally:
        directory.set_member(a_slapd.folder, a_slapd.uri, "datasci", "bob", member=True)
    assert FormBrowser(hub.url).login("bob", password_of("bob"))[0] == 302  # back in the group, back in
