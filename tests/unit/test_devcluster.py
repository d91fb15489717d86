"""The dev cluster's own logic that needs no machine: which processes are its orphans, the demo people, the
hub's config and its dev additions, the accounting's and the mail server's config."""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
from pathlib import Path

import pytest
import yaml
from traitlets.config import PyFileConfigLoader

from deploy.dev import (
    accounting,
    associations,
    builds,
    common,
    demo,
    directory,
    hosts,
    images,
    machine,
    mail,
    platform,
    slurmconf,
)
from deploy.dev.portal import hub_dev_settings
from deploy.dev.supervisor import Program, launched_as, render
from portal.admin.imagesafety import make_unprivileged, privileged_entries

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
        "dave": (5004, ["datasci"]),
        "erin": (5005, ["datasci"]),
        "frank": (5006, ["datasci"]),
        "grace": (5007, ["datasci"]),
        **{f"soak{n:02d}": (5200 + n, ["datasci"]) for n in range(1, 25)},
    }
    d = directory.Directory()
    assert [(p.uid, p.password, p.uid_number, p.gid_number) for p in d.people] == [
        ("alice", "alice-pw", 5001, 5000),
        ("bob", "bob-pw", 5002, 5000),
        ("carol", "carol-pw", 5003, 5000),
        ("dave", "dave-pw", 5004, 5000),
        ("erin", "erin-pw", 5005, 5000),
        ("frank", "frank-pw", 5006, 5000),
        ("grace", "grace-pw", 5007, 5000),
        *[(f"soak{n:02d}", f"soak{n:02d}-pw", 5200 + n, 5000) for n in range(1, 25)],
    ]
    soak = [f"soak{n:02d}" for n in range(1, 25)]
    assert d.groups == [
        directory.Group(
            "datasci", ["alice", "bob", "carol", "dave", "erin", "frank", "grace", *soak], "posixGroup", 5000
        ),
        directory.Group("hpcadmin", ["carol"], "posixGroup", 5100),
        directory.Group("mlteam", ["alice"], "groupOfNames"),
        directory.Group("webadmins", ["bob"], "groupOfNames"),
    ]
    assert demo.logins() == (
        "alice / alice-pw, bob / bob-pw, carol / carol-pw, dave / dave-pw (carol is an admin); "
        "the tests' side lane erin, frank, grace / NAME-pw; the soak's soak01..soak24 / soakNN-pw"
    )
    assert demo.summary() == (
        "alice, bob, carol, dave, erin, frank, grace, soak01..soak24; groups datasci, hpcadmin, mlteam, webadmins"
    )


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
    with pytest.raises(
        KeyError,
        match="no demo user 'zoe'; the demo users are alice, bob, carol, dave, erin, frank, grace, soak01..soak24",
    ):
        demo.user("zoe")


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


def test_slurm_sends_every_job_to_slurmdbd_and_keeps_each_users_jobs_private():
    lines = [
        line
        for line in slurmconf.slurm_conf(platform.PLATFORMS["debian12"]).splitlines()
        if line.startswith(("ClusterName", "Accounting", "JobAcct", "PrivateData"))
    ]
    assert lines == [
        "ClusterName=dsportal",
        "PrivateData=jobs,usage,users,accounts",  # as many sites; the hub sees through it (tests/integration)
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=10.77.0.1",  # the head node on the cluster network: jobs on the nodes run sacct
        "AccountingStoragePort=6819",
        # shards: node002's A100s; node004's MIG instances, each profile a type of its own
        "AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:a100_1g.10gb,gres/gpu:a100_3g.40gb,gres/gpu:v100,"
        "gres/shard",
        "AccountingStorageEnforce=associations,limits,qos",  # as a real site: deploy/dev/associations.py
        "JobAcctGatherType=jobacct_gather/linux",
        "JobAcctGatherFrequency=30",
    ]


def test_slurmdbd_keeps_the_jobs_in_mariadb_over_loopback():
    assert accounting.slurmdbd_conf("0123abcd") == (
        "# slurmdbd for the DS Portal dev cluster (written by deploy/devcluster): 0600, it holds the database "
        "password.\n"
        "AuthType=auth/munge\n"
        "DbdHost=localhost\n"
        "DbdPort=6819\n"
        "SlurmUser=root\n"
        "LogFile=/var/log/dsportal-dev/slurmdbd.log\n"
        "PidFile=/run/slurmdbd.pid\n"
        "StorageType=accounting_storage/mysql\n"
        "StorageHost=127.0.0.1\n"
        "StoragePort=3306\n"
        "StorageUser=slurm\n"
        "StoragePass=0123abcd\n"
        "StorageLoc=slurm_acct_db\n"
        "# As many sites: sacct and sacctmgr show each user only their own jobs, usage, record and accounts.\n"
        "# The hub's account sees through it as a coordinator of the users' accounts (deploy/dev/associations.py).\n"
        "PrivateData=jobs,usage,users,accounts\n"
    )


def test_the_slurm_database_user_is_made_or_set_to_the_password_and_gets_only_its_database():
    assert accounting.database_user_sql("0123abcd") == (
        "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '0123abcd';\n"
        "ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '0123abcd';\n"
        "GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'127.0.0.1';\n"
    )


def test_a_new_database_password_is_hex_and_new_each_time():
    first, second = accounting.new_password(), accounting.new_password()
    assert len(first) == 48 and set(first) <= set("0123456789abcdef") and first != second


def test_mariadb_runs_on_its_own_data_folder_on_loopback_only():
    assert accounting.mariadb_argv() == [
        "/usr/sbin/mariadbd",
        "--no-defaults",
        "--datadir=/var/lib/dsportal-mariadb/data",
        "--socket=/var/lib/dsportal-mariadb/mysqld.sock",
        "--pid-file=/var/lib/dsportal-mariadb/mariadbd.pid",
        "--bind-address=127.0.0.1",
        "--port=3306",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=512M",
        "--innodb-lock-wait-timeout=900",
    ]


def test_the_accounting_daemons_stop_after_slurmctld_the_database_last():
    rendered = render([*accounting.programs(), Program("slurmctld", ["/usr/sbin/slurmctld", "-D"], "6817")])
    blocks = {b.split("]")[0]: b for b in rendered.split("[program:")[1:]}
    assert [line for line in blocks["mariadb"].splitlines() if line.startswith(("user=", "priority="))] == [
        "user=mysql",
        "priority=100",
    ]
    assert [line for line in blocks["slurmdbd"].splitlines() if line.startswith(("user=", "priority="))] == [
        "user=root",
        "priority=200",
    ]
    assert "priority=" not in blocks["slurmctld"]  # supervisord's default, 999: stopped first


def test_exim_delivers_locally_only_and_takes_the_demo_domain():
    assert mail.settings() == (
        "# DS Portal dev cluster (written by deploy/devcluster; `reset` restores Debian's)\n"
        "dc_eximconfig_configtype='local'\n"
        "dc_other_hostnames='dsportal.test'\n"
        "dc_local_interfaces='127.0.0.1'\n"
        "dc_readhost=''\n"
        "dc_relay_domains=''\n"
        "dc_minimaldns='false'\n"
        "dc_relay_nets=''\n"
        "dc_smarthost=''\n"
        "CFILEMODE='644'\n"
        "dc_use_split_config='false'\n"
        "dc_hide_mailname=''\n"
        "dc_mailname_in_oh='true'\n"
        "dc_localdelivery='mail_spool'\n"
    )
    assert mail.program().argv == ["/usr/sbin/exim4", "-bdf", "-q30m"]
    assert mail.program().runs_as == "Debian-exim"  # how its orphan is recognised after a supervisord crash


def test_every_demo_person_has_a_mail_address_in_the_directory():
    assert [(p.uid, p.mail) for p in directory.Directory().people] == [
        ("alice", "alice@dsportal.test"),
        ("bob", "bob@dsportal.test"),
        ("carol", "carol@dsportal.test"),
        ("dave", "dave@dsportal.test"),
        *[(name, f"{name}@dsportal.test") for name in ("erin", "frank", "grace")],
        *[(f"soak{n:02d}", f"soak{n:02d}@dsportal.test") for n in range(1, 25)],
    ]
    assert directory.person_entry(directory.Person("alice", "pw", 5001, mail="alice@dsportal.test"), "{SSHA}h") == (
        "dn: uid=alice,ou=people,dc=dsportal,dc=test\n"
        "objectClass: inetOrgPerson\n"
        "objectClass: posixAccount\n"
        "uid: alice\n"
        "cn: Alice\n"
        "sn: Alice\n"
        "uidNumber: 5001\n"
        "gidNumber: 5000\n"
        "homeDirectory: /home/alice\n"
        "loginShell: /bin/bash\n"
        "mail: alice@dsportal.test\n"
        "userPassword: {SSHA}h"
    )
    assert "mail:" not in directory.person_entry(directory.Person("dave", "pw", 5009), "{SSHA}h")


def test_a_directory_built_before_mail_addresses_gets_them_added():
    assert directory.add_mail_ldif("bob", "bob@dsportal.test") == (
        "dn: uid=bob,ou=people,dc=dsportal,dc=test\nchangetype: modify\nadd: mail\nmail: bob@dsportal.test\n"
    )


def test_missing_associations_are_added_in_one_call_per_kind():

    held = {("vision", "alice"), ("nlp", "alice"), ("vision", "carol")}
    groups = associations.missing_users(held)
    assert groups[("vision", tuple(associations.OWN_QOS["bob"]))] == ["bob"]
    assert groups[("spent", tuple(associations.USER_QOS))] == ["carol"]
    everyone_else = groups[("vision", tuple(associations.USER_QOS))]
    assert everyone_else[:1] == ["dave"] and "alice" not in everyone_else and "carol" not in everyone_else
    assert len(everyone_else) == len(associations.USERS) - 3
    assert associations.missing_users({(a, u) for (a, _), us in groups.items() for u in us} | held) == {}


def test_a_reset_keeps_a_build_and_up_puts_it_back(tmp_path, monkeypatch):

    monkeypatch.setattr(builds, "BUILT", tmp_path / "built")
    venv = tmp_path / "prefix" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!")
    builds.keep(venv, "venv")
    assert not venv.exists() and (tmp_path / "built" / "venv" / "bin" / "python").read_text() == "#!"
    assert builds.restore(venv, "venv") and (venv / "bin" / "python").read_text() == "#!"
    assert not builds.restore(venv, "venv")  # nothing kept any more, and one is in place
    builds.keep(tmp_path / "nothing", "nothing")
    assert not (tmp_path / "built" / "nothing").exists()


def test_a_kept_image_loses_what_a_user_put_in_it_and_its_open_folders(tmp_path):

    image = tmp_path / "image"
    (image / "var" / "tmp" / "planted").mkdir(parents=True)
    (image / "var" / "tmp").chmod(0o1777)
    (image / "var" / "tmp" / "planted" / "payload").write_text("bob's")
    (image / "var" / "tmp" / "link").symlink_to("/etc/passwd")
    (image / "etc").mkdir()
    (image / "etc" / "os-release").write_text("root's")
    for path in (image / "var" / "tmp" / "planted", image / "var" / "tmp" / "planted" / "payload"):
        os.chown(path, 5002, 5002)
    os.lchown(image / "var" / "tmp" / "link", 5002, 5002)
    assert sorted(images.remove_foreign(image)) == [f"{image}/var/tmp/link", f"{image}/var/tmp/planted"]
    make_unprivileged(image)
    assert privileged_entries(image) == [] and list((image / "var" / "tmp").iterdir()) == []
    assert (image / "etc" / "os-release").read_text() == "root's" and Path("/etc/passwd").exists()


def test_the_nodes_names_resolve_to_their_own_addresses_and_an_older_loopback_line_goes():
    older = "127.0.0.1 localhost\n127.0.0.1 node001 node002 node003  # DS Portal dev cluster\n"
    users = "127.0.0.1 alice.localhost  # DS Portal dev cluster: one origin per user\n"
    text = machine.hosts_text(older + users, hosts.hosts_lines())
    assert text == (
        "127.0.0.1 localhost\n"
        "127.0.0.1 alice.localhost  # DS Portal dev cluster: one origin per user\n"
        "10.77.0.11 node001  # DS Portal dev cluster\n"
        "10.77.0.12 node002  # DS Portal dev cluster\n"
        "10.77.0.13 node003  # DS Portal dev cluster\n"
        "10.77.0.14 node004  # DS Portal dev cluster\n"
    )
    assert machine.hosts_text(text, hosts.hosts_lines()) == text  # a second up changes nothing
    # ... also with the users' line written after the nodes' (a fresh up: tls.ensure_host_names comes later)
    fresh = machine.hosts_text("127.0.0.1 localhost\n", hosts.hosts_lines()) + users
    assert machine.hosts_text(fresh, hosts.hosts_lines()) == fresh
    with pytest.raises(common.ClusterError, match="names a dev cluster node in a line of its own: '127.0.0.1 node001'"):
        machine.hosts_text("127.0.0.1 node001\n", hosts.hosts_lines())


def test_the_cluster_network_is_reached_from_the_machine_and_its_hosts_only():
    assert hosts.firewall_rules() == [
        ["-d", "10.77.0.0/24", "-i", "lo", "-j", "RETURN"],
        ["-d", "10.77.0.0/24", "-i", "dsportal0", "-j", "ACCEPT"],
        ["-d", "10.77.0.0/24", "-j", "DROP"],
    ]


def test_the_hub_trusts_the_forwarded_address_from_its_proxy_on_the_head_nodes_address_only():
    """The proxy reaches the hub at the head's address on the cluster network, so the hub sees its connections come
    from there: with the default 127.0.0.1 it would take every browser for one client (the login throttle and the
    anonymous rate limit would put everyone in one bucket).  The hub believes it there by itself, where that
    address is its host's own (portal/clientaddress.py: tests/component/test_auth.py), as a site's hub would."""
    hub = yaml.safe_load((DEPLOY / "portal.dev.yaml").read_text())["hub"]
    assert hub["internal_bind_url"] == hub["internal_connect_url"] == f"http://{hosts.HEAD_ADDRESS}:8081"
    assert "proxy_addresses" not in hub


def test_each_node_is_on_the_cluster_network_and_its_slurmd_runs_on_its_host():
    assert set(hosts.ADDRESSES) == set(common.NODES)
    assert all(ipaddress.ip_address(a) in hosts.SUBNET for a in [hosts.HEAD_ADDRESS, *hosts.ADDRESSES.values()])
    assert len({hosts.HEAD_ADDRESS, *hosts.ADDRESSES.values()}) == len(common.NODES) + 1
    assert all(len(hosts.veth(n)) <= 15 for n in common.NODES)  # the kernel's limit on an interface's name
    assert hosts.onhost_argv("node002", ["/usr/sbin/slurmd", "-D"]) == [
        "/bin/sh",
        str(hosts.ONHOST),
        "node002",
        "/usr/sbin/slurmd",
        "-D",
    ]
    conf = slurmconf.slurm_conf(platform.PLATFORMS["debian12"])
    assert "NodeName=node002 NodeAddr=10.77.0.12 NodeHostname=node002" in conf
    assert "(10.77.0.1)\n" in conf.split("SlurmctldHost=", 1)[1].split("\n", 1)[0] + "\n"
    assert "AccountingStorageHost=10.77.0.1\n" in conf
    assert "127.0.0.1" not in conf


def test_a_wrapped_daemon_is_found_by_the_command_line_it_shows():
    slurmd = ["/usr/sbin/slurmd", "-D", "-N", "node001"]
    program = Program("slurmd-node001", hosts.onhost_argv("node001", slurmd), "6821", shows=slurmd)
    assert launched_as(program.shows, slurmd)
    assert not launched_as(program.argv, slurmd)  # what supervisord starts is the wrapper, which execs slurmd


def test_a_program_not_installed_fails_a_step_in_words_and_is_passed_over_where_its_failure_is_allowed():
    # a new machine's `reset` (no iptables, no Slurm yet) went no further than its first missing program
    missing = ["dsportal-no-such-program", "--flag"]
    assert common.run(missing, check=False).returncode == 127
    with pytest.raises(common.ClusterError, match="dsportal-no-such-program is not installed here"):
        common.run(missing)
