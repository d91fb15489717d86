"""The backup and restore of docs/admins/upgrade.md, performed: the hub's database copied while the hub runs, its
cookie secret and crypt key kept, the state lost, everything put back; and what a lost crypt key costs (a real hub
with the portal's LDAP login, a real slapd, the mock Slurm)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.demo import password_of
from tests.support.hub import FormBrowser, HubProcess
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.slapd import ldap_settings

BACKUP_FILES = ("jupyterhub_cookie_secret",)  # besides the database, what data_dir holds


def backup(state, into) -> None:
    """As the docs say: the database with sqlite3's online .backup (consistent while the hub writes), the files."""
    into.mkdir()
    subprocess.run(
        ["sqlite3", str(state / "jupyterhub.sqlite"), f".backup '{into / 'jupyterhub.sqlite'}'"], check=True, timeout=60
    )
    for name in BACKUP_FILES:
        shutil.copy2(state / name, into / name)


@pytest.fixture
def a_hub(tmp_path, a_slapd):
    portal = config_data(MockSlurm(tmp_path / "mockslurm"))
    portal["ldap"] = ldap_settings(a_slapd)
    hub = HubProcess(tmp_path, portal, ldap=True)
    yield hub
    hub.stop()


def test_a_hub_restored_from_its_backup_keeps_its_users_tokens_logins_and_account_data(a_hub, tmp_path):
    hub = a_hub
    hub.start()
    alice = FormBrowser(hub.url)
    assert alice.login("alice", password_of("alice"))[0] == 302
    status, token = hub.api("POST", "/users/alice/tokens", {"note": "a script of alice's"})
    assert status == 201, token
    state, saved = tmp_path / "state", tmp_path / "backup"
    backup(state, saved)  # while the hub runs
    hub.stop()

    shutil.rmtree(state)  # the disk is gone
    state.mkdir(mode=0o700)
    for item in saved.iterdir():
        shutil.copy2(item, state / item.name)
    hub.start()
    assert hub.api("GET", "/user", token=token["token"])[1]["name"] == "alice"  # her token
    assert alice.get("/hub/home")[0] == 200  # her browser's login (the cookie secret)
    status, user = hub.api("GET", "/users/alice")
    assert status == 200 and user["auth_state"]["uidNumber"] == 5001, user  # the directory's data (the crypt key)
    hub.stop()

    # the same database with another crypt key: the account data cannot be read, and is treated as none
    hub.crypt_key = "cd" * 32
    hub.start()
    status, user = hub.api("GET", "/users/alice")
    assert status == 200 and not user.get("auth_state"), user
    assert hub.api("GET", "/user", token=token["token"])[0] == 200  # tokens do not depend on it
