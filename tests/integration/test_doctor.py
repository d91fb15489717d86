"""`dsportal doctor` on the dev cluster: all checks pass, and each broken setting is named with its fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slurm  # run again on Slurm 24.11 (deploy/devcluster test, phase 3)

DSPORTAL = "/opt/dsportal/venv/bin/dsportal"
PORTAL_YAML = Path("/etc/dsportal/portal.yaml")


def doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DSPORTAL, "doctor", *args], capture_output=True, text=True, timeout=180)


def test_doctor_passes_on_the_dev_cluster(cluster_api):
    result = doctor(str(PORTAL_YAML))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert all(line.startswith("OK ") for line in lines), lines
    names = [line.split(":")[0][5:] for line in lines]
    assert names == [
        "config",
        "slurm",
        "partition sxm2",
        "partition debug",
        "partition cpu",
        "partition mig",
        "slurm proctrack",
        "slurm task plugin",
        "cgroup ConstrainDevices",
        "cgroup ConstrainCores",
        "cgroup ConstrainRAMSpace",
        "slurm private data",
        "gpu types",
        "slurm accounts",
        "sudo sbatch as alice",
        "sudo scancel as alice",
        "sudo as root",
        "extension helper",
        "session environment",
        "kernel debian-py",
        "kernel debian-py-pulled",
        "hub address",
        "ldap",
        "tls files",
    ]


def broken(tmp_path: Path, change) -> str:
    data = yaml.safe_load(PORTAL_YAML.read_text())
    change(data)
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda d: d["slurm"]["partitions"].append({"name": "pcie", "max_gpus": 2}),
            "FIX  partition pcie: Slurm has no partition 'pcie' (it has cpu, debug, mig, sxm2); fix slurm.partitions",
        ),
        (
            lambda d: d["slurm"]["partitions"][2].update(max_gpus=2),  # the CPU-only node's partition
            "FIX  partition cpu: its nodes have no gpu GRES",
        ),
        (
            lambda d: d["environment"].update(prefix="/opt/nowhere"),
            "FIX  session environment: /opt/nowhere/bin/dsportal-singleuser is missing",
        ),
        (
            lambda d: d["hub"].update(internal_connect_url="http://no-such-host.invalid:8081"),
            "FIX  hub address: no-such-host.invalid (from http://no-such-host.invalid:8081) does not resolve",
        ),
        (
            lambda d: d["ldap"].update(service_password_file="/etc/dsportal/nope.pw"),
            "FIX  ldap: cannot read ldap.service_password_file",
        ),
        (lambda d: d["ldap"].update(uris=["ldap://127.0.0.1:1"]), "FIX  ldap: no directory server answered"),
        (
            lambda d: d["slurm"].update(extend_command="/usr/local/bin/nope"),
            "FIX  extension helper: /usr/local/bin/nope is missing",
        ),
        (
            lambda d: d["slurm"].update(extend_command="/usr/bin/id"),
            "FIX  extension helper: dsportal may not run /usr/bin/id as root",
        ),
        (
            lambda d: d["kernels"]["containers"][0].update(image="/opt/containers/nope"),
            "FIX  kernel debian-py: image /opt/containers/nope not found",
        ),
        (lambda d: d["slurm"].update(sinfo="/usr/bin/false"), "FIX  slurm: /usr/bin/false failed"),
        (
            lambda d: d["slurm"]["gpu_types"].update(h100="H100 80 GB"),
            "FIX  gpu types: slurm.gpu_types or slurm.hidden_gpu_types name h100, which no node of the portal's "
            "partitions has (Slurm has a100, a100_1g.10gb, a100_3g.40gb, v100)",
        ),
        (
            lambda d: d["slurm"].update(account="physics"),
            "FIX  slurm accounts: slurm.account is 'physics', which Slurm's accounting does not have",
        ),
    ],
)
def test_each_broken_setting_is_named_with_its_fix(cluster_api, tmp_path, change, expected):
    result = doctor(broken(tmp_path, change))
    assert result.returncode == 1
    assert any(line.startswith(expected) for line in result.stdout.splitlines()), result.stdout


def test_a_sudo_rule_that_does_not_cover_the_user_is_named(cluster_api):
    result = doctor(str(PORTAL_YAML), "--user", "daemon")
    assert result.returncode == 1
    assert (
        "FIX  sudo sbatch as daemon: dsportal may not run /usr/bin/sbatch as daemon; install deploy/sudoers.d/dsportal"
    ) in result.stdout


def test_an_invalid_config_is_named(tmp_path):
    bad = tmp_path / "portal.yaml"
    bad.write_text("ldap:\n  bind_dn_template: uid={username},dc=x\nslurm:\n  cores_per_gpu: 0\n")
    result = doctor(str(bad))
    assert result.returncode == 1
    assert "FIX  config: portal.yaml: slurm.cores_per_gpu: 0 (must be an integer from 1 to 256)" in result.stdout
