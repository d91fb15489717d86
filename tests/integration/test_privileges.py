"""The production privilege model on the dev cluster: an unprivileged hub, no root or system-account
sessions, and users who cannot read each other's homes, session logs or the hub's secrets."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.cluster import ROOT

SECRETS = [
    "/etc/dsportal/admin.token",
    "/etc/dsportal/crypt.key",
    "/etc/dsportal/proxy.token",
    "/etc/dsportal/ldap-service.pw",
    "/var/lib/dsportal/jupyterhub_cookie_secret",
    "/var/lib/dsportal/jupyterhub.sqlite",
    # the dev directory's: passwords and every account's password hash
    "/var/lib/dsportal-dev/slapd/slapd.conf",
    "/var/lib/dsportal-dev/slapd/entries.ldif",
    "/var/lib/dsportal-dev/slapd/service.pw",
    "/var/lib/dsportal-dev/slapd/root.pw",
]


def owner_of_listener(port: int) -> str:
    out = subprocess.run(["ss", "-H", "-ltnp", f"sport = :{port}"], capture_output=True, text=True, timeout=30).stdout
    pid = re.search(r"pid=(\d+)", out).group(1)
    return subprocess.run(["ps", "-o", "user=", "-p", pid], capture_output=True, text=True, timeout=30).stdout.strip()


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=30)


def test_the_hub_and_the_proxy_do_not_run_as_root(cluster):
    assert owner_of_listener(8081) == "dsportal"  # the hub's API
    assert owner_of_listener(8000) == "dsportal"  # the proxy
    assert owner_of_listener(8001) == "dsportal"  # the proxy's API


@pytest.mark.alone  # expects an empty queue
@pytest.mark.parametrize("name", ["root", "daemon", "dsportal", "slurm"])
def test_root_and_system_accounts_cannot_get_a_session(cluster, name):
    status, _ = cluster.request("POST", f"/hub/api/users/{name}")
    assert status in (201, 409)
    status, body = cluster.request("POST", f"/hub/api/users/{name}/server", {"gpus": 1})
    assert status == 403, body
    assert cluster.server(name) is None
    assert cluster.jobs() == {}
    cluster.request("DELETE", f"/hub/api/users/{name}")


def test_the_sudo_rule_allows_portal_users_only(cluster):
    assert (
        subprocess.run(
            ["visudo", "-cf", str(ROOT / "deploy" / "sudoers.d" / "dsportal")], capture_output=True, timeout=30
        ).returncode
        == 0
    )
    allowed = as_user("dsportal", "sudo", "-n", "-l", "-u", "alice", "/usr/bin/sbatch")
    assert allowed.returncode == 0 and allowed.stdout.strip() == "/usr/bin/sbatch"
    for target in ("root", "daemon", "slurm"):
        assert as_user("dsportal", "sudo", "-n", "-l", "-u", target, "/usr/bin/sbatch").returncode != 0, target
    assert as_user("dsportal", "sudo", "-n", "-l", "-u", "alice", "/bin/sh").returncode != 0
    # only the job's named variables pass: anything else the hub (or whoever runs as it) sets is refused
    smuggled = subprocess.run(
        [
            "runuser",
            "-u",
            "dsportal",
            "--",
            "env",
            "SLURM_CONF=/tmp/evil.conf",
            "sudo",
            "-n",
            "--preserve-env=SLURM_CONF",
            "-u",
            "alice",
            "/usr/bin/scancel",
            "--version",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert smuggled.returncode != 0 and "not allowed to set" in smuggled.stderr


def test_slurm_refuses_root_jobs(cluster):
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    assert re.search(r"^DisableRootJobs\s*=\s*Yes", out, re.M | re.I), out
    refused = subprocess.run(["sbatch", "--wrap", "true"], capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0


def test_users_cannot_read_each_other_or_the_hubs_secrets(cluster):
    cluster.start("alice", {"gpus": 0, "hours": 1})
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    log = Path(f"/home/alice/.dsportal-session-{job}.log")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600, oct(log.stat().st_mode)
    assert stat.S_IMODE(Path("/home/alice").stat().st_mode) == 0o700
    assert as_user("bob", "cat", str(log)).returncode != 0
    assert as_user("bob", "ls", "/home/alice").returncode != 0
    assert as_user("bob", "cat", "/home/alice/templates/getting-started.ipynb").returncode != 0
    for secret in SECRETS:
        mode = stat.S_IMODE(Path(secret).stat().st_mode)
        assert mode & 0o077 == 0, f"{secret} is {oct(mode)}"
        assert as_user("bob", "cat", secret).returncode != 0, secret
    assert as_user("bob", "ls", "/var/log/dsportal-dev").returncode != 0  # logs are not for every account


def test_sessions_ignore_the_users_own_jupyter_config(cluster):
    """A ~/.jupyter config could add handlers to what the session serves; it is not read."""
    config = Path("/home/alice/.jupyter/jupyter_server_config.py")
    marker = Path("/home/alice/user-config-was-read")
    assert as_user("alice", "mkdir", "-p", str(config.parent)).returncode == 0
    assert as_user("alice", "sh", "-c", f"echo \"open('{marker}', 'w').close()\" > {config}").returncode == 0
    try:
        cluster.start("alice", {"gpus": 0, "hours": 1})
        cluster.wait_ready("alice")
        assert cluster.request("GET", "/user/alice/api/status")[0] == 200
        assert not marker.exists()
        status, boards = cluster.request("GET", "/user/alice/dsportal/tensorboard/api/instances")
        assert status == 200 and boards == []  # the portal's own extension is still there
    finally:
        config.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)


def test_no_container_image_holds_a_setuid_program_a_device_node_or_a_folder_others_write(cluster):
    """The attack: debootstrap and image layers carry setuid-root programs (su, mount) and crw-rw-rw- devices;
    on storage without nosuid any user runs them from the file system, outside any container."""
    from portal.admin.imagesafety import privileged_entries

    images = [Path("/opt/containers/debian-py"), *Path("/opt/containers/pulled").iterdir()]
    assert len([i for i in images if i.is_dir() and not i.name.startswith(".")]) == 2, images
    for image in images:
        if image.is_dir() and not image.name.startswith("."):
            assert privileged_entries(image) == [], image
