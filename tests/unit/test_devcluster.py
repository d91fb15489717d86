"""The dev cluster's own logic that needs no machine: which processes are its orphans, the demo people, the
hub's config and its dev additions."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import yaml
from traitlets.config import PyFileConfigLoader

from deploy.dev import common, demo, directory
from deploy.dev.portal import hub_dev_settings
from deploy.dev.supervisor import launched_as

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

PROXY = ["configurable-http-proxy", "--ip", "127.0.0.1", "--port", "8000"]


@pytest.mark.parametrize(
    "cmdline, ours",
    [
        (PROXY, True),
        (
            ["node", "/usr/local/bin/configurable-http-proxy", "--ip", "127.0.0.1", "--port", "8000"],
            True,
        ),  # via its shebang
        (
            ["node", "/usr/local/bin/configurable-http-proxy", "--ip", "0.0.0.0", "--port", "8000"],
            False,
        ),  # other options
        (["node", "/srv/other-proxy", "--ip", "127.0.0.1", "--port", "8000"], False),
        (["configurable-http-proxy"], False),
        ([], False),
    ],
)
def test_a_process_is_ours_only_with_our_exact_command_line(cmdline, ours):
    assert launched_as(PROXY, cmdline) is ours


def test_a_hub_started_through_its_interpreter_is_recognised():
    hub = ["/opt/dsportal/venv/bin/jupyterhub", "-f", "/etc/dsportal/jupyterhub_config.py"]
    assert launched_as(hub, ["/opt/dsportal/venv/bin/python3", *hub])
    assert not launched_as(hub, ["/opt/dsportal/venv/bin/python3", *hub[:2], "/tmp/other.py"])


def test_the_demo_people_make_the_unix_accounts_the_directory_and_the_logins():
    assert common.GROUPS == {"datasci": 5000, "hpcadmin": 5100}
    assert common.USERS == {
        "alice": (5001, ["datasci"]),
        "bob": (5002, ["datasci"]),
        "carol": (5003, ["datasci", "hpcadmin"]),
    }
    d = directory.Directory()
    assert [(p.uid, p.password, p.uid_number, p.gid_number) for p in d.people] == [
        ("alice", "alice-pw", 5001, 5000),
        ("bob", "bob-pw", 5002, 5000),
        ("carol", "carol-pw", 5003, 5000),
    ]
    assert d.groups == [
        directory.Group("datasci", ["alice", "bob", "carol"], "posixGroup", 5000),
        directory.Group("hpcadmin", ["carol"], "posixGroup", 5100),
        directory.Group("mlteam", ["alice"], "groupOfNames"),
        directory.Group("webadmins", ["bob"], "groupOfNames"),
    ]
    assert demo.logins() == "alice / alice-pw, bob / bob-pw, carol / carol-pw (carol is an admin)"
    assert demo.summary() == "alice, bob, carol; groups datasci, hpcadmin, mlteam, webadmins"


def test_the_dev_portals_admin_groups_make_exactly_the_declared_admins():
    """deploy/portal.dev.yaml cannot import deploy/dev/demo.py: the two must agree."""
    hub = yaml.safe_load((DEPLOY / "portal.dev.yaml").read_text())["hub"]
    admins = {
        u.name
        for u in demo.USERS
        if u.name in hub.get("admin_users", []) or set(u.groups) & set(hub.get("admin_groups", []))
    }
    assert admins == {u.name for u in demo.USERS if u.admin} == {"carol"}


def test_every_demo_user_may_use_the_dev_portal():
    allowed = set(yaml.safe_load((DEPLOY / "portal.dev.yaml").read_text())["ldap"]["allowed_groups"])
    assert all(set(u.groups) & allowed for u in demo.USERS)


def test_an_unknown_demo_user_is_named_in_the_error():
    with pytest.raises(KeyError, match="no demo user 'dave'; the demo users are alice, bob, carol"):
        demo.user("dave")


@pytest.fixture
def an_installed_hub_config(tmp_path, monkeypatch) -> Path:
    """deploy/jupyterhub_config.py copied as an admin installs it, with a valid portal.yaml beside it."""
    portal = tmp_path / "portal.yaml"
    portal.write_text(
        yaml.safe_dump(
            {
                "ldap": {"bind_dn_template": "uid={username},dc=x"},
                "hub": {"data_dir": str(tmp_path / "state")},
                "sessions": {"idle_timeout": 3600},
            }
        )
    )
    monkeypatch.setenv("DSPORTAL_CONFIG", str(portal))
    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copy(DEPLOY / "jupyterhub_config.py", etc / "jupyterhub_config.py")
    return etc / "jupyterhub_config.py"


def load(config_file: Path):
    """The config as JupyterHub loads `config_file` (its namespace has get_config and load_subconfig)."""
    return PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()


def services(c) -> list[str]:
    return [s["name"] for s in c.JupyterHub.services.get_value([])]


def test_the_hub_config_alone_applies_the_yaml(an_installed_hub_config):
    c = load(an_installed_hub_config)
    assert services(c) == ["dsportal-idle-culler-3600"]
    assert "Spawner" not in c or "poll_interval" not in c.Spawner


def test_the_dev_additions_join_the_yaml_and_are_checked_last(an_installed_hub_config, tmp_path, caplog):
    token = tmp_path / "admin.token"
    token.write_text("a-token\n")
    config_d = an_installed_hub_config.with_name("jupyterhub_config.d")
    config_d.mkdir()
    (config_d / "devcluster.py").write_text(hub_dev_settings(token))
    (config_d / "50-site.py").write_text(
        'c = get_config()  # noqa: F821\nc.JupyterHub.bind_url = "http://10.0.0.1:8000"\n'
        'c.SlurmSpawner.req_partition = "gpu"\n'
    )
    (config_d / "README.txt").write_text("c = oops: not Python, not loaded")
    c = load(an_installed_hub_config)
    assert services(c) == ["dsportal-idle-culler-3600", "devcluster-admin"]  # appended to the YAML's
    assert c.JupyterHub.services.get_value([])[1]["api_token"] == "a-token"
    assert {"name": "admin", "services": ["devcluster-admin"]} in c.JupyterHub.load_roles.get_value([])
    assert c.Spawner.poll_interval == 10
    assert c.JupyterHub.bind_url == "http://10.0.0.1:8000"  # a site file's setting wins over the YAML's
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "c.SlurmSpawner.req_partition is ignored by DS Portal's spawner: set slurm.partitions in the admin YAML "
        "instead. Remove it."
    ]  # report_ignored_settings ran after the site files
